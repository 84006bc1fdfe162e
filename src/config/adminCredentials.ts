/**
 * The admin listener's named credentials (ADMIN_CREDENTIALS) and what each may do:
 *
 *   ADMIN_CREDENTIALS="ops:<password>:commands,immediate;viewer:<password>"
 *
 * Entries are separated by `;`; each is `name:password`, optionally followed by `:` and its rights, `,`
 * between: `read` (every credential has it: the fleet routes, the command ledger's list, the queue UI),
 * `commands` (may ask for an immobilise or mobilise) and `immediate` (may ask for one that does not wait
 * for the vehicle to be safe; implies `commands`). An entry without rights reads only: today's single
 * `user:password` keeps every right it had (there were no commands before) and gains none that can stop a
 * vehicle; an operator names the credentials that may.
 *
 * A value that does not split into `name:password` entries on `;` (a password holding a `;`, from before
 * several credentials were taken) is read as one credential, as it always was. A password that itself ends
 * in `:` and a list of rights is read as those rights: choose another.
 */

export const RIGHTS = ['read', 'commands', 'immediate'] as const;
export type Right = (typeof RIGHTS)[number];

export interface AdminCredential {
  name: string;
  password: string;
  rights: ReadonlySet<Right>;
}

const RIGHTS_SUFFIX = /:((?:read|commands|immediate)(?:,(?:read|commands|immediate))*)$/;

function entryOf(text: string): AdminCredential | undefined {
  const colon = text.indexOf(':');
  if (colon <= 0) return undefined;
  const name = text.slice(0, colon);
  let rest = text.slice(colon + 1);
  const rights = new Set<Right>(['read']);
  const m = RIGHTS_SUFFIX.exec(rest);
  if (m) {
    rest = rest.slice(0, m.index);
    for (const r of m[1]!.split(',') as Right[]) rights.add(r);
    if (rights.has('immediate')) rights.add('commands');
  }
  return { name, password: rest, rights };
}

/** ADMIN_CREDENTIALS as its named credentials (see the module comment); empty for an empty value. */
export function parseAdminCredentials(value: string | undefined): AdminCredential[] {
  if (value === undefined || value === '') return [];
  const pieces = value.split(';').filter((p) => p !== '');
  const entries = pieces.map(entryOf);
  if (pieces.length > 1 && entries.every((e) => e !== undefined)) return entries as AdminCredential[];
  const one = entryOf(value);
  return one ? [one] : [];
}


/** The admin listener's context variable its guard sets (service/credentials.ts): the credential let in (undefined with ADMIN_AUTH=none). */
export type AdminVariables = { credential: AdminCredential | undefined };
