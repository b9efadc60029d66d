// cluster-key-slot (ioredis's own dependency) ships no types: the one function the store uses.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0-16383) of a key, hash tags honoured. */
  export default function calculateSlot(key: string | Buffer): number;
}
