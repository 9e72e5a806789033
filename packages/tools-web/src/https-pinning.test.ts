// HTTPS through the pinned connection: the socket goes to the vetted address while TLS still
// checks the certificate against the URL's host name.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../test/tool-context.js';
import type { HostResolver } from './ssrf-guard.js';
import { createWebExtractTool } from './web-extract.js';

describe('web_extract over https with a pinned address', () => {
  let server: Server;
  let port: number;
  let cert: string;
  const dir = mkdtempSync(join(tmpdir(), 'shears-tls-'));
  const resolver: HostResolver = async () => [{ address: '127.0.0.1', family: 4 }];

  beforeAll(async () => {
    // A self-signed certificate for secure.example only.
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=secure.example',
        '-addext',
        'subjectAltName=DNS:secure.example',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
    server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (_request, response) =>
      response.writeHead(200, { 'content-type': 'text/plain' }).end('over tls'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('connects to the vetted address and verifies the certificate for the host name', async () => {
    const tool = createWebExtractTool({
      ca: cert,
      minIntervalMsPerHost: 0,
      ssrf: { allowlist: ['127.0.0.1'], resolver },
    });
    const { json } = await call(tool, { urls: [`https://secure.example:${port}/`] });
    expect(json.results[0].content).toBe('over tls');
  });

  it('fails when the certificate does not name the host, even though the address is right', async () => {
    const tool = createWebExtractTool({
      ca: cert,
      minIntervalMsPerHost: 0,
      ssrf: { allowlist: ['127.0.0.1'], resolver },
    });
    const { json } = await call(tool, { urls: [`https://other.example:${port}/`] });
    expect(json.results[0].error).toMatch(/altnames|does not match|ERR_TLS_CERT_ALTNAME_INVALID/i);
  });

  it('fails without the CA: the self-signed certificate is not trusted', async () => {
    const tool = createWebExtractTool({
      minIntervalMsPerHost: 0,
      ssrf: { allowlist: ['127.0.0.1'], resolver },
    });
    const { json } = await call(tool, { urls: [`https://secure.example:${port}/`] });
    expect(json.results[0].error).toMatch(/self[- ]signed|certificate/i);
  });
});
