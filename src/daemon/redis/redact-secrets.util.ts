/**
 * Removes credentials from text about Redis before it is logged: the password (and user) of a
 * redis:// or rediss:// URL, and every literal occurrence of the configured password (ioredis
 * errors can quote AUTH arguments).
 */
export function redactSecrets(text: string, redisUrl?: string): string {
  let out = text.replace(/(rediss?:\/\/)([^@/\s]*)@/gi, '$1***@');
  if (redisUrl) {
    try {
      const { password, username } = new URL(redisUrl);
      for (const secret of [password, username].map((s) => decodeURIComponent(s)).filter((s) => s.length >= 3)) out = out.split(secret).join('***');
    } catch {
      // not a URL: nothing more to hide
    }
  }
  return out;
}
