// What an account's plan does not allow, or a quota it has used up. The API answers every one of these
// with 403 and the message as its detail (api/app/create-app.ts), wherever it is thrown; the rules that
// throw them are in plan-rules.ts.
export class PlanRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlanRefusal';
  }
}
