// Custom hostnames serve their site once their control is proven by a DNS TXT record
// (`_quire-challenge.{hostname}`). Here: a DNS server on loopback that Quire is told to ask
// (`--dns-server`), answering from the records a test publishes, and the proof made as a
// site's admin makes it: the record read from the site's screen in the app, published,
// then `dnsRevalidateCustomHostname`.

import dgram from 'node:dgram';
import { check } from './client.js';

/**
 * Starts the DNS server; returns `{ address, publish(name, text), stop() }`. It answers TXT
 * questions for the names published, and "no such name" to anything else.
 */
export async function startDns() {
    const records = new Map();
    const socket = dgram.createSocket('udp4');
    socket.on('message', (q, from) => {
        try {
            const labels = [];
            let at = 12;
            for (;;) {
                const n = q[at];
                at += 1;
                if (!n) break;
                labels.push(q.subarray(at, at + n).toString('latin1').toLowerCase());
                at += n;
            }
            const kind = q.readUInt16BE(at);
            const texts = kind === 16 ? records.get(labels.join('.')) ?? [] : [];
            const head = Buffer.from(q.subarray(0, at + 4));
            head[2] = 0x81;
            head[3] = texts.length ? 0x80 : 0x83;
            head.writeUInt16BE(texts.length, 6);
            head.fill(0, 8, 12);
            const answers = texts.map((t) => {
                const text = Buffer.from(t, 'latin1');
                const rr = Buffer.alloc(12 + 1 + text.length);
                rr.set([0xc0, 12, 0, 16, 0, 1, 0, 0, 0, 60], 0);
                rr.writeUInt16BE(text.length + 1, 10);
                rr[12] = text.length;
                text.copy(rr, 13);
                return rr;
            });
            socket.send(Buffer.concat([head, ...answers]), from.port, from.address);
        } catch {
            // Not a question this server understands: no answer.
        }
    });
    await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return {
        address: `127.0.0.1:${socket.address().port}`,
        publish(name, text) {
            const key = name.toLowerCase();
            records.set(key, [...(records.get(key) ?? []), text]);
        },
        stop() {
            return new Promise((resolve) => socket.close(resolve));
        },
    };
}

/** A session of `user` (an organization admin) in the app: its cookie. */
async function signIn(server, user) {
    const password = 'a conformance passphrase';
    await server.setPassword(user.email, password);
    const res = await fetch(`${server.url}/signin`, {
        method: 'POST',
        redirect: 'manual',
        headers: { origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ email: user.email, password }),
    });
    if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
    return res.headers.get('set-cookie').split(';')[0];
}

/**
 * The TXT record that proves control of `host` for the site, as the site's screen in the
 * app shows it to the admins: `{ name, value }`.
 */
export async function hostnameRecord(server, admin, orgId, siteId) {
    const cookie = await signIn(server, admin);
    const res = await fetch(`${server.url}/o/${orgId}/sites/${siteId}`, { headers: { cookie } });
    const html = await res.text();
    const shown = /<dl class="hostname-challenge">(.*?)<\/dl>/s.exec(html)?.[1];
    if (!shown) throw new Error(`no record on the site's screen (${res.status})`);
    const field = (label) => new RegExp(`<dt>${label}</dt><dd><code>([^<]*)</code>`).exec(shown)[1];
    return { name: field('Name'), value: field('Value') };
}

/** Proves control of `host` for the site: its record published, then checked. */
export async function proveHostname(server, dns, admin, orgId, siteId, host) {
    const { name, value } = await hostnameRecord(server, admin, orgId, siteId);
    dns.publish(name, value);
    check(
        'dnsRevalidateCustomHostname',
        await admin.api.customHostnames.dnsRevalidateCustomHostname(host),
        { status: 204 },
    );
}
