import { bearerMatches } from './overrides.controller';

const TOKEN = 'a-token-of-twenty-chars';

describe('bearerMatches (the operator token)', () => {
  it('accepts exactly `Bearer <token>` (scheme in any case)', () => {
    expect(bearerMatches(`Bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(bearerMatches(`bearer ${TOKEN}`, TOKEN)).toBe(true);
  });

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['the token without the scheme', TOKEN],
    ['another scheme', `Basic ${TOKEN}`],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`],
    ['the token and more', `Bearer ${TOKEN}x`],
    ['two tokens', `Bearer ${TOKEN} ${TOKEN}`],
  ])('refuses %s', (_what, header) => {
    expect(bearerMatches(header, TOKEN)).toBe(false);
  });

  it('never matches while no token is configured, whatever the header', () => {
    expect(bearerMatches('Bearer ', '')).toBe(false);
    expect(bearerMatches('Bearer x', '')).toBe(false);
  });
});
