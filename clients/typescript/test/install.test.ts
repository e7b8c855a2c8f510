// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The package installs like a library: `npm pack`, then `npm install` of the tarball into an empty
// project beside an SDK release newer than the one this package's tests pin. No newer patch of
// @modelcontextprotocol/server is published yet (2.4.0 is the latest, checked with `npm view
// @modelcontextprotocol/server versions`), so the installed SDK is packed again as the next patch
// version: what npm's resolver judges is the peer range against that version. Dependencies come
// from npm's cache (filled by npm ci) where it has them.

import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { packageRoot } from './paths.js';

const exec = promisify(execFile);
const npm = (cwd: string, ...args: string[]): Promise<{ stdout: string; stderr: string }> =>
  exec('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, maxBuffer: 16 << 20 });

describe('the packed package', () => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'mrtr-install-'));
  after(() => {
    rmSync(tmp, { recursive: true, force: true });
  });

  it('installs into an empty project beside a newer SDK patch release, and imports', { timeout: 180_000 }, async () => {
    // The package: only what a user needs (no Go module, no sources or tests).
    const packed = JSON.parse((await npm(packageRoot, 'pack', '--json', '--pack-destination', tmp)).stdout) as {
      filename: string;
      files: { path: string }[];
    }[];
    const files = packed[0]?.files.map((f) => f.path) ?? [];
    assert.ok(files.includes('dist/index.js') && files.includes('dist/index.d.ts'), files.join(' '));
    for (const f of files) {
      assert.ok(!/(^|\/)go\.(mod|sum)$|^src\/|^test\/|^testdata\//.test(f), `${f} is in the package`);
    }
    const tarball = path.join(tmp, packed[0]?.filename ?? '');

    // The SDK, as the patch release after the version the tests pin.
    const sdkDir = path.join(tmp, 'sdk');
    cpSync(path.join(packageRoot, 'node_modules', '@modelcontextprotocol', 'server'), sdkDir, { recursive: true });
    const sdkManifest = JSON.parse(readFileSync(path.join(sdkDir, 'package.json'), 'utf8')) as Record<string, unknown>;
    const pinned = String(sdkManifest.version);
    const [major, minor, patch] = pinned.split('.').map(Number) as [number, number, number];
    const newer = `${major}.${minor}.${patch + 1}`;
    delete sdkManifest.scripts; // packed as it is, not built again
    writeFileSync(path.join(sdkDir, 'package.json'), JSON.stringify({ ...sdkManifest, version: newer }, null, 2));
    const sdkTarball = path.join(tmp, (JSON.parse((await npm(sdkDir, 'pack', '--json', '--pack-destination', tmp)).stdout) as { filename: string }[])[0]?.filename ?? '');

    // An empty project: installing both must resolve without a conflict (an exact peer pin would
    // fail here with ERESOLVE), and the package must import.
    const app = path.join(tmp, 'app');
    mkdirSync(app);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '0.0.0', private: true, type: 'module' }));
    await npm(app, 'install', '--prefer-offline', sdkTarball, tarball);
    await npm(app, 'ls', '--all'); // fails on a missing or invalid peer
    const { stdout } = await exec(
      'node',
      [
        '--input-type=module',
        '-e',
        `import * as k from '@mrtr-dev/keyring';
         import * as sdk from '@modelcontextprotocol/server';
         console.log(JSON.stringify({ sdk: typeof sdk.createMcpHandler, exports: Object.keys(k).sort() }));`,
      ],
      { cwd: app },
    );
    const got = JSON.parse(stdout) as { sdk: string; exports: string[] };
    assert.equal(got.sdk, 'function');
    const installed = JSON.parse(readFileSync(path.join(app, 'node_modules', '@modelcontextprotocol', 'server', 'package.json'), 'utf8')) as { version: string };
    assert.equal(installed.version, newer);
    for (const name of ['SignedCodec', 'RequestState', 'recordParams', 'KeyringWatcher', 'AckReporter', 'parseKeyring']) {
      assert.ok(got.exports.includes(name), `${name} is not exported`);
    }
    for (const name of ['canonical', 'canonicalFirstWins', 'canonicalParams', 'formatFloat', 'JSONSyntaxError']) {
      assert.ok(!got.exports.includes(name), `${name}, an internal, is exported`);
    }
  });
});
