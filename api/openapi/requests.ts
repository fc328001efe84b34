// The request side of the OpenAPI document, written from the valibot schemas that validate requests:
// the document and the validation cannot disagree about a rule.
import { toJsonSchema } from '@valibot/to-json-schema';
import { resolver } from 'hono-openapi';
import type * as v from 'valibot';

type Schema = v.GenericSchema;
type ObjectSchema = v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>;
type JsonSchema = Record<string, unknown>;

// errorMode 'ignore': transformations (the lax scalars) and checks have no JSON Schema; their metadata states them.
const jsonSchemaOf = (schema: Schema): JsonSchema => {
  const { $schema: _, ...rest } = toJsonSchema(schema, { errorMode: 'ignore' }) as JsonSchema;
  return rest;
};

/** A required JSON request body: a request without one is refused (422), so the document says so. */
export function jsonRequestBody(schema: Schema) {
  return { required: true, content: { 'application/json': { schema: resolver(schema) } } };
}

/** One query parameter per entry of the object schema that validates the query string. */
export function queryParameters(schema: ObjectSchema) {
  const object = jsonSchemaOf(schema) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, property]) => ({
    name,
    in: 'query' as const,
    required: object.required?.includes(name) ?? false,
    schema: property,
  }));
}

export function pathParameter(name: string, schema: Schema) {
  return { name, in: 'path' as const, required: true, schema: jsonSchemaOf(schema) };
}
