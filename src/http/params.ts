// Path and query parameters obey the same string rules as JSON bodies (strictJson.ts): no NUL,
// which Postgres text cannot hold, and well-formed Unicode; a 400 names the parameter.
import { badRequest } from '../errors.ts';
import { stringProblem } from './strictJson.ts';

export function checkParams(params: Record<string, string>, query: URLSearchParams): void {
  for (const [name, value] of Object.entries(params)) {
    const p = stringProblem(value);
    if (p) throw badRequest(`path parameter ${name} ${p}`);
  }
  for (const [name, value] of query) {
    const pk = stringProblem(name);
    if (pk) throw badRequest(`a query parameter name ${pk}`);
    const p = stringProblem(value);
    if (p) throw badRequest(`query parameter ${name} ${p}`);
  }
}
