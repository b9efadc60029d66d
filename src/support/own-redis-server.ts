/**
 * A redis-server of the caller's own, checked to be the one answering (issue 30, item 4): the
 * benches start theirs with it, so a bench never touches the Redis at REDIS_URL (a user's, or the
 * one a test run uses) nor a database another bench flushes, and two benches, or a bench beside
 * `npm test`, change neither's numbers nor anyone's data.
 */
import Redis from 'ioredis';
import { RedisServer, RedisServerOptions } from './redis-server';

/** The server's own pid, as the server answering at its port reports it. */
async function answeringPid(server: RedisServer): Promise<number | null> {
  const client = new Redis(server.url(), { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1] ?? NaN);
  } catch {
    return null;
  } finally {
    client.disconnect();
  }
}

/**
 * Starts a private redis-server on a free port and checks that the server answering there is the
 * one started (two processes can pick the same free port at once: the loser's server exits and its
 * client would talk to the winner's). A bench that dies leaves no server behind.
 */
export async function startOwnRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const server = await RedisServer.start(options);
    if ((await answeringPid(server)) === server.pid) {
      const pid = server.pid;
      process.once('exit', () => {
        try {
          if (pid) process.kill(pid, 'SIGKILL');
        } catch {
          // already stopped
        }
      });
      return server;
    }
    await server.stop();
  }
  throw new Error('could not start a redis-server of its own');
}
