-- Idempotency keys (the Idempotency-Key header of the creating POSTs): one row per API key and key,
-- claimed by the first request (the primary key makes a second claim conflict, across API replicas)
-- and holding its answer for 24 hours. A claim whose request has not answered holds a lease: a claim
-- left by a process that died is taken over after it.
CREATE TABLE "idempotency_keys" (
	"api_key_id" text NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"claim" uuid NOT NULL,
	"lease_until" timestamp (3) with time zone NOT NULL,
	"response_status" integer,
	"response_content_type" text,
	"response_body" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "idempotency_keys_api_key_id_key_pk" PRIMARY KEY("api_key_id","key")
);
--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" USING btree ("created_at");
