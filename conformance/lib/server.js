// Starts and stops a Quire server for one test file, and mints tokens for it.

import { spawn, execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';

const here = dirname(fileURLToPath(import.meta.url));

/** The quire binary: $QUIRE_BIN, else the workspace's debug build. */
export const QUIRE_BIN = process.env.QUIRE_BIN
    ? resolve(process.env.QUIRE_BIN)
    : resolve(here, '..', '..', 'target', 'debug', 'quire');

/** The shared PostgreSQL database, when the run is asked to use one. */
export const DATABASE_URL = process.env.QUIRE_CONFORMANCE_DATABASE_URL || undefined;

const STARTUP_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/** An environment for quire without any storage or bind settings inherited from ours. */
function childEnv() {
    const env = { ...process.env, QUIRE_LOG: 'info', NO_COLOR: '1' };
    for (const key of ['QUIRE_DATABASE_URL', 'QUIRE_DATA_DIR', 'QUIRE_BIND', 'QUIRE_PUBLIC_URL']) {
        delete env[key];
    }
    return env;
}

/** A random suffix that keeps e-mails unique across runs sharing one database. */
export function uniqueSuffix() {
    return `${Date.now().toString(36)}${randomBytes(4).toString('hex')}`;
}

/**
 * Starts `quire serve` on a free port with a fresh data dir (and the shared PostgreSQL
 * database when QUIRE_CONFORMANCE_DATABASE_URL is set), waits until /healthz answers 200,
 * and returns a handle to mint tokens and stop it. `args` are further `quire serve` flags
 * (such as `--fetch-allow 127.0.0.1/32` for sources served by the test itself).
 */
export async function startServer({ args = [] } = {}) {
    const dataDir = await mkdtemp(join(tmpdir(), 'quire-conformance-'));
    const storage = ['--data-dir', dataDir];
    if (DATABASE_URL) storage.push('--database-url', DATABASE_URL);

    const child = spawn(QUIRE_BIN, ['serve', '--bind', '127.0.0.1:0', ...storage, ...args], {
        env: childEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    const exited = new Promise((res) => child.once('exit', (code, signal) => res({ code, signal })));
    let exitInfo;
    exited.then((info) => (exitInfo = info));
    // Never outlive the test process, whatever happens to it.
    const killOnExit = () => {
        if (!exitInfo) child.kill('SIGKILL');
    };
    process.once('exit', killOnExit);
    exited.then(() => process.off('exit', killOnExit));

    const baseUrl = await new Promise((resolveUrl, reject) => {
        const timer = setTimeout(
            () => reject(new Error(`quire did not report its address in time\n${log}`)),
            STARTUP_TIMEOUT_MS,
        );
        const onData = (chunk) => {
            log += chunk.toString().replace(ANSI, '');
            const m = /quire listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
            if (m) {
                clearTimeout(timer);
                resolveUrl(m[1]);
            }
        };
        child.stderr.on('data', onData);
        child.stdout.on('data', (c) => (log += c.toString().replace(ANSI, '')));
        child.once('error', (err) => {
            clearTimeout(timer);
            reject(new Error(`cannot run ${QUIRE_BIN}: ${err.message}`));
        });
        exited.then(({ code, signal }) => {
            clearTimeout(timer);
            reject(new Error(`quire exited early (code ${code}, signal ${signal})\n${log}`));
        });
    }).catch(async (err) => {
        child.kill('SIGKILL');
        await rm(dataDir, { recursive: true, force: true });
        throw err;
    });

    // Ready when /healthz answers 200: poll it, no fixed sleeps.
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    for (;;) {
        if (exitInfo) throw new Error(`quire exited before it was healthy\n${log}`);
        try {
            const res = await fetch(`${baseUrl}/healthz`);
            await res.arrayBuffer();
            if (res.status === 200) break;
        } catch {
            // not accepting connections yet
        }
        if (Date.now() > deadline) {
            child.kill('SIGKILL');
            throw new Error(`quire at ${baseUrl} never became healthy\n${log}`);
        }
        await new Promise((r) => setTimeout(r, 25)); // poll interval
    }

    let stopped = false;
    return {
        url: baseUrl,
        dataDir,
        get log() {
            return log;
        },

        /** Runs `quire admin create-token` against the same storage; returns the token. */
        createToken(email, name) {
            const args = ['admin', 'create-token', '--email', email, ...storage];
            if (name) args.push('--name', name);
            return new Promise((res, rej) => {
                execFile(QUIRE_BIN, args, { env: childEnv() }, (err, stdout, stderr) => {
                    if (err) return rej(new Error(`create-token failed: ${err.message}\n${stderr}`));
                    const token = stdout.trim().split('\n').pop().trim();
                    if (!token) return rej(new Error(`create-token printed no token\n${stderr}`));
                    res(token);
                });
            });
        },

        /**
         * Runs `quire admin set-password` against the same storage (the password on its
         * stdin): creates the user if missing, or sets the password of an existing one.
         */
        setPassword(email, password, { name, admin = false } = {}) {
            const args = ['admin', 'set-password', '--email', email, ...storage];
            if (name) args.push('--name', name);
            if (admin) args.push('--admin');
            return new Promise((res, rej) => {
                const child = execFile(QUIRE_BIN, args, { env: childEnv() }, (err, _stdout, stderr) => {
                    if (err) return rej(new Error(`set-password failed: ${err.message}\n${stderr}`));
                    res();
                });
                child.stdin.end(`${password}\n`);
            });
        },

        /** SIGTERM, wait for the exit (SIGKILL after a while), remove the data dir. */
        async stop() {
            if (stopped) return;
            stopped = true;
            if (!exitInfo) {
                child.kill('SIGTERM');
                const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
                await exited;
                clearTimeout(timer);
            }
            await rm(dataDir, { recursive: true, force: true });
            return exitInfo;
        },
    };
}
