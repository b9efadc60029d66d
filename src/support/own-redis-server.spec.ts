import Redis from 'ioredis';
import { startOwnRedis } from './own-redis-server';
import { RedisServer } from './redis-server';

async function pidAt(url: string): Promise<number> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    return Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1]);
  } finally {
    client.disconnect();
  }
}

describe('startOwnRedis', () => {
  it('starts a redis-server of its own: the server answering at its URL is the process it started', async () => {
    const server = await startOwnRedis();
    try {
      expect(server.pid).toBeDefined();
      expect(await pidAt(server.url())).toBe(server.pid);
    } finally {
      await server.stop();
    }
  });

  it('refuses a port where another redis-server answers (its own could not bind there)', async () => {
    const other = await RedisServer.start();
    try {
      // The twin: RedisServer alone, given that port, takes the other server for its own.
      const unchecked = await RedisServer.start({ port: other.port });
      try {
        expect(await pidAt(unchecked.url())).toBe(other.pid);
        expect(unchecked.pid).not.toBe(other.pid);
      } finally {
        await unchecked.stop();
      }
      await expect(startOwnRedis({ port: other.port })).rejects.toThrow('could not start a redis-server of its own');
      expect(await pidAt(other.url())).toBe(other.pid);
    } finally {
      await other.stop();
    }
  });
});
