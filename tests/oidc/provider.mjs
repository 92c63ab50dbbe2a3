// A real OpenID provider for the single sign-on tests: node-oidc-provider with its own
// development login and consent pages. Started by tests/common/oidc.rs:
//
//   PROVIDER_DIR   where `npm install oidc-provider` put node_modules (.ci/run does it)
//   PORT           the port to listen on (127.0.0.1)
//   REDIRECT_URIS  the client's redirect URIs, comma-separated
//   STATE_FILE     JSON read at each use, so a test can change it while the provider runs:
//                  { "accounts": { "ada": { "groups": ["perf-eng"], "email": "…" } },
//                    "id_token": "normal" | "expired" | "foreign" }
//                  "expired" re-signs each ID token (with the real key) so that it expired
//                  an hour ago; "foreign" re-signs it with a key the JWKS does not publish
//                  (under the real key's id); "rotated" signs with a new key (new id) that
//                  the JWKS publishes from then on, as a provider rotating its keys does.
//   GROUPS_IN_USERINFO  set: groups only from the userinfo endpoint, not in the ID token.
import { generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = join(process.env.PROVIDER_DIR, 'node_modules', 'oidc-provider');
const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const { default: Provider } = await import(pathToFileURL(join(dir, pkg.main)).href);

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const readState = () => JSON.parse(readFileSync(process.env.STATE_FILE, 'utf8'));

const kid = 'perfjournal-test';
const real = generateKeyPairSync('rsa', { modulusLength: 2048 });
const foreign = generateKeyPairSync('rsa', { modulusLength: 2048 });
const rotated = generateKeyPairSync('rsa', { modulusLength: 2048 });
const rotatedKid = 'perfjournal-test-rotated';

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'perfjournal',
    client_secret: 'perfjournal-test-secret',
    redirect_uris: (process.env.REDIRECT_URIS || '').split(',').filter(Boolean),
    response_types: ['code'],
    grant_types: ['authorization_code'],
  }],
  jwks: { keys: [{ ...real.privateKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' }] },
  scopes: ['openid', 'profile', 'email', 'groups'],
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'name'],
    email: ['email'],
    groups: ['groups'],
  },
  conformIdTokenClaims: Boolean(process.env.GROUPS_IN_USERINFO),
  pkce: { required: () => true },
  cookies: { keys: ['perfjournal-test-cookie-key'] },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, sub) {
    const account = readState().accounts?.[sub];
    if (!account) return undefined;
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          preferred_username: account.username || sub,
          email: account.email || `${sub}@example.test`,
          groups: account.groups || [],
        };
      },
    };
  },
});

const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');

// The ID token as a faulty provider would send it (see STATE_FILE).
provider.use(async (ctx, next) => {
  await next();
  if (ctx.path !== '/token' || !ctx.body || !ctx.body.id_token) return;
  const mode = readState().id_token || 'normal';
  if (mode === 'normal') return;
  const [h, p] = ctx.body.id_token.split('.');
  const header = JSON.parse(Buffer.from(h, 'base64url'));
  const payload = JSON.parse(Buffer.from(p, 'base64url'));
  let key = real.privateKey;
  if (mode === 'expired') {
    const now = Math.floor(Date.now() / 1000);
    payload.iat = now - 7200;
    payload.exp = now - 3600;
  } else if (mode === 'foreign') {
    key = foreign.privateKey;
  } else if (mode === 'rotated') {
    key = rotated.privateKey;
    header.kid = rotatedKid;
  }
  const input = `${b64(header)}.${b64(payload)}`;
  const signature = sign('sha256', Buffer.from(input), key).toString('base64url');
  ctx.body = { ...ctx.body, id_token: `${input}.${signature}` };
});

// After a rotation the key set publishes the new key too.
provider.use(async (ctx, next) => {
  await next();
  if (ctx.path !== '/jwks' || readState().id_token !== 'rotated' || !ctx.body?.keys) return;
  const jwk = { ...rotated.publicKey.export({ format: 'jwk' }), kid: rotatedKid, use: 'sig', alg: 'RS256' };
  ctx.body = { keys: [...ctx.body.keys, jwk] };
});

// Its development pages import a web font; the tests run offline, where that lookup only
// makes the browser wait.
provider.use(async (ctx, next) => {
  await next();
  if (typeof ctx.body === 'string' && ctx.body.includes('fonts.googleapis.com')) {
    ctx.body = ctx.body.replace(/@import url\(https:\/\/fonts\.googleapis\.com[^)]*\);/g, '');
  }
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
