// What an account's plan does not allow, or a quota it has used up. The API answers every one of these
// with 403 and the message as its detail (api/app/create-app.ts), wherever it is thrown.
import type { Plan } from './plans.ts';

export class PlanRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlanRefusal';
  }
}

/** is_private needs a plan with private files. */
export function checkPrivateFilesAllowed(plan: Pick<Plan, 'name' | 'privateFiles'>, isPrivate: boolean): void {
  if (isPrivate && !plan.privateFiles) throw new PlanRefusal(`private files (is_private) are not available on your plan (${plan.name})`);
}
