-- Commands taken in from an FfmpegCommand made with kubectl (issue 30): the resource they stand for,
-- which lives in its own namespace under a name of its own. Null for the HTTP API's commands: their
-- resource is in the operator's namespace, named after the command id.
ALTER TABLE "commands" ADD COLUMN "resource_namespace" text;--> statement-breakpoint
ALTER TABLE "commands" ADD COLUMN "resource_name" text;
