// Organizations: create, list, get, update, e-mail domains, and their access errors.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, uniqueSuffix } from '../lib/server.js';
import {
    check,
    expectApiError,
    newUser,
    raw,
    createOrganization,
    setupOrg,
    listAll,
} from '../lib/client.js';

let server;
let admin;
let reader;
let outsider;
let org;
before(async () => {
    server = await startServer();
    admin = await newUser(server, 'admin');
    reader = await newUser(server, 'reader');
    outsider = await newUser(server, 'outsider');
    org = await setupOrg(server, admin, 'Orgs Org', [{ user: reader, role: 'read' }]);
});
after(async () => {
    await server?.stop();
});

test('createOrganization: 201, the 0.202.0 schema, the creator is admin', async () => {
    const created = await createOrganization(server, admin.token, 'Created Org');
    assert.equal(created.object, 'organization');
    assert.equal(created.title, 'Created Org');
    assert.equal(created.permissions.admin, true);
    assert.deepEqual(created.emailDomains, []);
    assert.equal(created.urls.location, `${server.url}/v1/orgs/${created.id}`);

    const member = check(
        'getMemberInOrganizationById',
        await admin.api.orgs.getMemberInOrganizationById(created.id, admin.id),
        { status: 200 },
    );
    assert.equal(member.role, 'admin');
});

test('createOrganization: the Location header the spec declares names the new org', async () => {
    const res = await raw(server, 'POST', '/v1/orgs', { token: admin.token, body: { title: 'Located Org' } });
    assert.equal(res.status, 201);
    assert.equal(
        res.headers.get('location'),
        res.body.urls.location,
        'createOrganization 201 declares a Location header: "API URL for the newly created organization"',
    );
});

test('createOrganization: invalid bodies get 400, no token gets 401', async () => {
    for (const body of [{}, { title: 'x' }, { title: 42 }, 'not json']) {
        const res = await raw(server, 'POST', '/v1/orgs', { token: admin.token, body });
        assert.equal(res.status, 400, `body ${JSON.stringify(body)} → ${res.status}`);
        assert.equal(res.body.error.code, 400);
    }
    const res = await raw(server, 'POST', '/v1/orgs', { body: { title: 'Anonymous' } });
    assert.equal(res.status, 401);
});

test('listOrganizationsForAuthenticatedUser: only the caller’s orgs, paginated', async () => {
    const fresh = await newUser(server, 'fresh');
    const none = check(
        'listOrganizationsForAuthenticatedUser',
        await fresh.api.orgs.listOrganizationsForAuthenticatedUser(),
        { status: 200 },
    );
    assert.deepEqual(none.items, []);

    const ids = [];
    for (const title of ['One', 'Two', 'Three']) ids.push((await createOrganization(server, fresh.token, title)).id);
    const { items, pages } = await listAll('listOrganizationsForAuthenticatedUser', (page) =>
        fresh.api.orgs.listOrganizationsForAuthenticatedUser({ limit: 1, page }),
    );
    assert.deepEqual(items.map((o) => o.id).sort(), ids.sort());
    assert.equal(pages.length, 3);
    for (const p of pages) {
        assert.equal(p.items.length, 1);
        if (p.count !== undefined) assert.equal(p.count, 3);
    }

    const readerOrgs = check(
        'listOrganizationsForAuthenticatedUser',
        await reader.api.orgs.listOrganizationsForAuthenticatedUser(),
        { status: 200 },
    );
    assert.deepEqual(readerOrgs.items.map((o) => o.id), [org.id]);
    assert.equal(readerOrgs.items[0].permissions.admin, false);
});

test('getOrganizationById: members see it with their permissions', async () => {
    const asAdmin = check('getOrganizationById', await admin.api.orgs.getOrganizationById(org.id), {
        status: 200,
    });
    assert.equal(asAdmin.id, org.id);
    assert.equal(asAdmin.title, 'Orgs Org');
    assert.equal(asAdmin.permissions.admin, true);

    const asReader = check('getOrganizationById', await reader.api.orgs.getOrganizationById(org.id), {
        status: 200,
    });
    assert.equal(asReader.permissions.admin, false);
    assert.equal(asReader.permissions.view, true);
});

test('getOrganizationById: 404 for non-members and unknown orgs', async () => {
    const body = await expectApiError(outsider.api.orgs.getOrganizationById(org.id), 404, 'getOrganizationById');
    assert.equal(body.error.code, 404);
    await expectApiError(admin.api.orgs.getOrganizationById('nosuchorg0000000'), 404, 'getOrganizationById');
});

test('updateOrganizationById: every field round-trips', async () => {
    const hostname = `h${uniqueSuffix()}`;
    // An organization may claim only the domain of its claimant's own address.
    const domain = admin.email.split('@')[1];
    const updated = check(
        'updateOrganizationById',
        await admin.api.orgs.updateOrganizationById(org.id, {
            title: 'Orgs Org Renamed',
            hostname,
            emailDomains: [domain],
            defaultRole: 'edit',
            logo: 'https://example.com/logo.png',
            sso: true,
            ai: true,
            inviteLinks: false,
        }),
        { status: 200 },
    );
    assert.equal(updated.title, 'Orgs Org Renamed');
    assert.equal(updated.hostname, hostname);
    assert.deepEqual(updated.emailDomains, [domain]);
    assert.equal(updated.defaultRole, 'edit');
    assert.equal(updated.urls.logo, 'https://example.com/logo.png');
    assert.equal(updated.sso, true);
    assert.equal(updated.ai, true);
    assert.equal(updated.inviteLinks, false);

    const again = check('getOrganizationById', await admin.api.orgs.getOrganizationById(org.id), {
        status: 200,
    });
    assert.deepEqual(
        [again.title, again.hostname, again.emailDomains, again.defaultRole, again.urls.logo, again.sso, again.ai, again.inviteLinks],
        ['Orgs Org Renamed', hostname, [domain], 'edit', 'https://example.com/logo.png', true, true, false],
    );

    // Nullable fields: guest default role and no logo.
    const cleared = check(
        'updateOrganizationById',
        await admin.api.orgs.updateOrganizationById(org.id, {
            defaultRole: null,
            logo: null,
            sso: false,
            ai: false,
            inviteLinks: true,
            emailDomains: [],
        }),
        { status: 200 },
    );
    assert.ok(cleared.defaultRole === null || cleared.defaultRole === undefined, 'guest default role');
    assert.equal(cleared.urls.logo, undefined);
    assert.deepEqual(cleared.emailDomains, []);
    assert.equal(cleared.inviteLinks, true);
    assert.equal(cleared.title, 'Orgs Org Renamed', 'untouched fields are kept');
    assert.equal(cleared.hostname, hostname);

    const restored = check(
        'updateOrganizationById',
        await admin.api.orgs.updateOrganizationById(org.id, { defaultRole: 'read', title: 'Orgs Org' }),
        { status: 200 },
    );
    assert.equal(restored.defaultRole, 'read');
});

test('updateOrganizationById: invalid values get 400', async () => {
    await expectApiError(admin.api.orgs.updateOrganizationById(org.id, { title: 'x' }), 400, 'updateOrganizationById');
    await expectApiError(admin.api.orgs.updateOrganizationById(org.id, { hostname: 'ab' }), 400, 'updateOrganizationById');
    await expectApiError(
        admin.api.orgs.updateOrganizationById(org.id, { defaultRole: 'owner' }),
        400,
        'updateOrganizationById',
    );
    await expectApiError(
        admin.api.orgs.updateOrganizationById(org.id, { logo: 'not a url' }),
        400,
        'updateOrganizationById',
    );
    await expectApiError(
        admin.api.orgs.updateOrganizationById(org.id, { emailDomains: ['no spaces allowed.com x'] }),
        400,
        'updateOrganizationById',
    );
});

test('updateOrganizationById: malformed JSON and wrong types get 400', async () => {
    for (const body of ['{', '[]', JSON.stringify({ title: 5 }), JSON.stringify({ sso: 'yes' })]) {
        const res = await raw(server, 'PATCH', `/v1/orgs/${org.id}`, { token: admin.token, body });
        assert.equal(res.status, 400, `body ${body} → ${res.status}`);
    }
});

test('updateOrganizationById: a hostname taken by another org is refused with 409', async () => {
    const hostname = `t${uniqueSuffix()}`;
    const first = await createOrganization(server, admin.token, 'Host One');
    const second = await createOrganization(server, admin.token, 'Host Two');
    check('updateOrganizationById', await admin.api.orgs.updateOrganizationById(first.id, { hostname }), {
        status: 200,
    });
    await expectApiError(admin.api.orgs.updateOrganizationById(second.id, { hostname }), 409, 'updateOrganizationById');
});

test('updateOrganizationById: 403 for non-admin members, 404 for outsiders', async () => {
    const body = await expectApiError(
        reader.api.orgs.updateOrganizationById(org.id, { title: 'Reader Was Here' }),
        403,
        'updateOrganizationById',
    );
    assert.match(body.error.message, /\S/);
    await expectApiError(
        outsider.api.orgs.updateOrganizationById(org.id, { title: 'Outsider Was Here' }),
        404,
        'updateOrganizationById',
    );
    const unchanged = check('getOrganizationById', await admin.api.orgs.getOrganizationById(org.id), {
        status: 200,
    });
    assert.equal(unchanged.title, 'Orgs Org');
});

test('getOrganizationsForEmailDomain: members and same-domain users see the org', async () => {
    const domain = `e${uniqueSuffix()}.conformance.test`;
    const claimant = await newUser(server, 'claimant', { domain });
    const domainOrg = await createOrganization(server, claimant.token, 'Domain Org');
    await expectApiError(
        admin.api.orgs.updateOrganizationById(org.id, { emailDomains: [domain] }),
        403,
        'updateOrganizationById',
    );
    check(
        'updateOrganizationById',
        await claimant.api.orgs.updateOrganizationById(domainOrg.id, { emailDomains: [domain] }),
        { status: 200 },
    );

    const asMember = check(
        'getOrganizationsForEmailDomain',
        await claimant.api.emailDomains.getOrganizationsForEmailDomain(domain),
        { status: 200 },
    );
    assert.deepEqual(asMember.organizations.map((o) => o.id), [domainOrg.id]);

    const colleague = await newUser(server, 'colleague', { domain });
    const asColleague = check(
        'getOrganizationsForEmailDomain',
        await colleague.api.emailDomains.getOrganizationsForEmailDomain(domain),
        { status: 200 },
    );
    assert.deepEqual(asColleague.organizations.map((o) => o.id), [domainOrg.id]);
    // Seen through the shared domain, not membership: no permission yet.
    assert.ok(Object.values(asColleague.organizations[0].permissions).every((p) => p === false));

    const asOutsider = check(
        'getOrganizationsForEmailDomain',
        await outsider.api.emailDomains.getOrganizationsForEmailDomain(domain),
        { status: 200 },
    );
    assert.deepEqual(asOutsider.organizations, []);

    const unclaimed = check(
        'getOrganizationsForEmailDomain',
        await admin.api.emailDomains.getOrganizationsForEmailDomain(`u${uniqueSuffix()}.conformance.test`),
        { status: 200 },
    );
    assert.deepEqual(unclaimed.organizations, []);
});
