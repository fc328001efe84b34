// Test kit: a new account on `plan` with a 'main' key, as the API sees it once the key is authenticated.
import type { AccountsRepo, Caller } from '../accounts-repo.ts';

export async function newCaller(accounts: AccountsRepo, name: string, plan: string): Promise<Caller> {
  const account = await accounts.createAccount(name, plan);
  const caller = await accounts.authenticate((await accounts.createKey(account.id, 'main')).key);
  if (!caller) throw new Error(`the new key of ${name} did not authenticate`);
  return caller;
}
