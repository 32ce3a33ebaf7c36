// The acceptance scenario: a new user starts the server on the embedded default storage,
// creates a token, and the official client creates an organization, invites a second
// user and builds a team. Every response is validated against the official schema.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, uniqueSuffix } from '../lib/server.js';
import { client, check, createOrganization, newUser, spec202 } from '../lib/client.js';
import { validate } from '../lib/spec.js';

let server;
before(async () => {
    server = await startServer();
});
after(async () => {
    await server?.stop();
});

test('a new user creates an org, invites a second user and builds a team', async (t) => {
    // A token for the first user, created with the admin command.
    const aliceEmail = `alice-${uniqueSuffix()}@conformance.test`;
    const aliceToken = await server.createToken(aliceEmail, 'Alice Story');
    assert.match(aliceToken, /\S{16,}/);
    const alice = client(server, aliceToken);

    const info = check('getApiInformation', await alice.getApiInformation(), { status: 200 });
    assert.equal(typeof info.version, 'string');

    const me = check('getAuthenticatedUser', await alice.user.getAuthenticatedUser(), { status: 200 });
    assert.equal(me.email, aliceEmail);
    assert.equal(me.displayName, 'Alice Story');

    // The organization (createOrganization is newer than the 0.137.0 client: plain fetch).
    const org = await createOrganization(server, aliceToken, 'Story Org');
    validate(spec202, 'createOrganization', 201, org);
    assert.equal(org.title, 'Story Org');

    const fetched = check('getOrganizationById', await alice.orgs.getOrganizationById(org.id), { status: 200 });
    assert.equal(fetched.id, org.id);
    const mine = check(
        'listOrganizationsForAuthenticatedUser',
        await alice.orgs.listOrganizationsForAuthenticatedUser(),
        { status: 200 },
    );
    assert.ok(mine.items.some((o) => o.id === org.id), 'the new org is listed for its creator');

    const aliceMember = check(
        'getMemberInOrganizationById',
        await alice.orgs.getMemberInOrganizationById(org.id, me.id),
        { status: 200 },
    );
    assert.equal(aliceMember.role, 'admin', 'the creator is an admin');

    // A second user, who already exists, is invited by e-mail and joins at once.
    const bob = await newUser(server, 'bob', { name: 'Bob Story' });
    const invite = check(
        'inviteUsersToOrganization',
        await alice.orgs.inviteUsersToOrganization(org.id, { emails: [bob.email], role: 'edit' }),
        { status: 200 },
    );
    assert.deepEqual(invite.users, [bob.id]);
    assert.equal(invite.invited, 1);

    const bobOrgs = check(
        'listOrganizationsForAuthenticatedUser',
        await bob.api.orgs.listOrganizationsForAuthenticatedUser(),
        { status: 200 },
    );
    assert.ok(bobOrgs.items.some((o) => o.id === org.id), 'the invited user sees the org');

    const members = check(
        'listMembersInOrganizationById',
        await alice.orgs.listMembersInOrganizationById(org.id),
        { status: 200 },
    );
    assert.deepEqual(
        members.items.map((m) => [m.id, m.role]).sort(),
        [
            [me.id, 'admin'],
            [bob.id, 'edit'],
        ].sort(),
    );

    // A team with both of them.
    const team = check(
        'createOrganizationTeam',
        await alice.orgs.createOrganizationTeam(org.id, { title: 'Writers', members: [me.id] }),
        { status: 201 },
    );
    assert.equal(team.title, 'Writers');

    const added = await alice.orgs.addMemberToOrganizationTeamById(org.id, team.id, bob.id, {});
    check('addMemberToOrganizationTeamById', added, { status: 204 });

    const teamMembers = check(
        'listTeamMembersInOrganizationById',
        await alice.orgs.listTeamMembersInOrganizationById(org.id, team.id),
        { status: 200 },
    );
    assert.deepEqual(teamMembers.items.map((m) => m.organization.id).sort(), [me.id, bob.id].sort());

    const teamNow = check(
        'getTeamInOrganizationById',
        await alice.orgs.getTeamInOrganizationById(org.id, team.id),
        { status: 200 },
    );
    assert.equal(teamNow.members, 2);

    // Bob sees the team among his teams.
    const bobTeams = check(
        'listTeamsForOrganizationMember',
        await bob.api.orgs.listTeamsForOrganizationMember(org.id, bob.id),
        { status: 200 },
    );
    assert.deepEqual(
        bobTeams.items.map((i) => i.team.id),
        [team.id],
    );
    assert.equal(bobTeams.items[0].member.role, 'member');

    await t.test('the server logged each request', () => {
        assert.match(server.log, /GET \/v1\/orgs\/\S+\/teams\/\S+\/members 200/);
    });
});

test('the second user does not exist yet: the invite waits for their first request', async () => {
    const ownerEmail = `owner-${uniqueSuffix()}@conformance.test`;
    const ownerToken = await server.createToken(ownerEmail, 'Owner Story');
    const owner = client(server, ownerToken);
    const ownerUser = check('getAuthenticatedUser', await owner.user.getAuthenticatedUser(), { status: 200 });
    const org = await createOrganization(server, ownerToken, 'Waiting Org');

    const newcomerEmail = `newcomer-${uniqueSuffix()}@conformance.test`;
    const invite = check(
        'inviteUsersToOrganization',
        await owner.orgs.inviteUsersToOrganization(org.id, { emails: [newcomerEmail], role: 'comment' }),
        { status: 200 },
    );
    assert.deepEqual(invite.users, [], 'nobody joined yet');
    assert.equal(invite.invited, 1);

    // The newcomer gets an account and a token, and makes a first authenticated request.
    const newcomerToken = await server.createToken(newcomerEmail, 'Newcomer Story');
    const newcomer = client(server, newcomerToken);
    const newcomerUser = check('getAuthenticatedUser', await newcomer.user.getAuthenticatedUser(), { status: 200 });
    const orgs = check(
        'listOrganizationsForAuthenticatedUser',
        await newcomer.orgs.listOrganizationsForAuthenticatedUser(),
        { status: 200 },
    );
    assert.deepEqual(orgs.items.map((o) => o.id), [org.id]);

    const team = check(
        'createOrganizationTeam',
        await owner.orgs.createOrganizationTeam(org.id, { title: 'Crew', members: [ownerUser.id, newcomerUser.id] }),
        { status: 201 },
    );
    assert.equal(team.members, 2);
    const member = check(
        'getMemberInOrganizationById',
        await owner.orgs.getMemberInOrganizationById(org.id, newcomerUser.id),
        { status: 200 },
    );
    assert.equal(member.role, 'comment');
    assert.equal(member.teams, 1);
});
