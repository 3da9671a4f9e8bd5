// A real OpenID provider for the autogpt-shim tests (oidc-provider 9, development
// interactions). Listens on 127.0.0.1, port 0, prints `READY <issuer>` once serving and one
// `EVENT <what>` line per token or revocation request (never a token value).
//
// Environment:
//   CLIENT_ID  the native public client (default autogpt-local-executor)
//   TAMPER     none | signature | audience: spoil the ID token of every token response
//              (a flipped signature byte, or re-signed with another audience)
import http from 'node:http';
import { once } from 'node:events';
import * as jose from 'jose';
import Provider from 'oidc-provider';

const clientId = process.env.CLIENT_ID || 'autogpt-local-executor';
const tamper = process.env.TAMPER || 'none';

const server = http.createServer();
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
const jwk = { ...(await jose.exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    // Native client: any port of a loopback redirect is accepted (RFC 8252 7.3).
    redirect_uris: ['http://localhost/callback', 'http://127.0.0.1/callback'],
  }],
  jwks: { keys: [jwk] },
  scopes: ['openid', 'offline_access', 'USE_TOOLS'],
  features: {
    devInteractions: { enabled: true },
    revocation: { enabled: true },
  },
  rotateRefreshToken: true,
  ttl: { AccessToken: 3600, IdToken: 3600, RefreshToken: 86400, Grant: 86400, Session: 86400, Interaction: 600 },
});

provider.use(async (ctx, next) => {
  const path = ctx.path;
  await next();
  if (path === '/token') {
    const grant = ctx.oidc?.params?.grant_type ?? '?';
    console.log(`EVENT token ${grant} ${ctx.status}`);
    const body = ctx.body;
    if (ctx.status === 200 && body && typeof body.id_token === 'string' && tamper !== 'none') {
      if (tamper === 'signature') {
        const parts = body.id_token.split('.');
        const sig = parts[2];
        parts[2] = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
        body.id_token = parts.join('.');
      } else if (tamper === 'audience') {
        const claims = jose.decodeJwt(body.id_token);
        claims.aud = 'someone-else';
        body.id_token = await new jose.SignJWT(claims)
          .setProtectedHeader({ alg: 'RS256', kid: 'test-key' })
          .sign(privateKey);
      }
    }
  } else if (path === '/token/revocation') {
    console.log(`EVENT revoke ${ctx.oidc?.params?.token_type_hint ?? '?'} ${ctx.status}`);
  }
});

server.on('request', provider.callback());
console.log(`READY ${issuer}`);
process.on('SIGTERM', () => process.exit(0));
