import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { credentialOf, parseAdminCredentials } from './credentials.js';

const basic = (user: string, pw: string) => `Basic ${Buffer.from(`${user}:${pw}`).toString('base64')}`;

describe('named admin credentials', () => {
  it('reads entries, their rights, and a single user:password as it always was (reads only)', () => {
    const all = parseAdminCredentials('ops:correct-horse-battery:commands,immediate;viewer:another-long-pass');
    expect(all.map((c) => [c.name, c.password, [...c.rights].sort()])).toEqual([
      ['ops', 'correct-horse-battery', ['commands', 'immediate', 'read']],
      ['viewer', 'another-long-pass', ['read']],
    ]);
    expect(parseAdminCredentials('admin:pass:with:colons-x')[0]).toMatchObject({ name: 'admin', password: 'pass:with:colons-x' });
    expect([...parseAdminCredentials('admin:some-long-password')[0]!.rights]).toEqual(['read']);
    // A password with a `;` from before: one credential, as ever.
    expect(parseAdminCredentials('admin:semi;colon-password')).toEqual([expect.objectContaining({ name: 'admin', password: 'semi;colon-password' })]);
    expect([...parseAdminCredentials('ops:some-long-password:immediate')[0]!.rights].sort()).toEqual(['commands', 'immediate', 'read']);
  });

  it('finds the credential a Basic header names, and no other', () => {
    const all = parseAdminCredentials('ops:correct-horse-battery:commands;viewer:another-long-pass');
    expect(credentialOf(basic('viewer', 'another-long-pass'), all)?.name).toBe('viewer');
    expect(credentialOf(basic('viewer', 'correct-horse-battery'), all)).toBeUndefined();
    expect(credentialOf('Bearer x', all)).toBeUndefined();
    expect(credentialOf(undefined, all)).toBeUndefined();
  });

  it('checks each credential’s strength, named, and refuses a name twice', () => {
    expect(() => loadConfig({ PUSH_AUTH: 'none', ADMIN_CREDENTIALS: 'ops:correct-horse-battery:commands;viewer:short' })).toThrow(/ADMIN_CREDENTIALS: "viewer": the password must have 12 or more characters/);
    expect(() => loadConfig({ PUSH_AUTH: 'none', ADMIN_CREDENTIALS: 'ops:correct-horse-battery;ops:another-long-pass' })).toThrow(/"ops" is named twice/);
    expect(loadConfig({ PUSH_AUTH: 'none', ADMIN_CREDENTIALS: 'ops:correct-horse-battery:commands;viewer:another-long-pass' }).ADMIN_CREDENTIALS).toBeDefined();
  });
});
