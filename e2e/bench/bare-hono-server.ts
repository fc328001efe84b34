// The poll benchmarks' baseline: the thinnest Hono route on @hono/node-server, answering the JSON it is
// given at the route given (default /v1/commands/:id).
// Run: node --import tsx e2e/bench/bare-hono-server.ts <port> <json file> [route]; prints "listening".
import { readFileSync } from 'node:fs';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const [port, file, route = '/v1/commands/:id'] = process.argv.slice(2);
const body = JSON.parse(readFileSync(file, 'utf8')) as unknown;
const app = new Hono();
app.get(route, (c) => c.json(body));
serve({ fetch: app.fetch, port: Number(port), hostname: '127.0.0.1' }, () => console.log('listening'));
