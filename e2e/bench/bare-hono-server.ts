// The poll benchmark's baseline: the thinnest Hono route on @hono/node-server, answering the JSON it is
// given. Run: node --import tsx e2e/bench/bare-hono-server.ts <port> <json file>; prints "listening".
import { readFileSync } from 'node:fs';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const [port, file] = process.argv.slice(2);
const body = JSON.parse(readFileSync(file, 'utf8')) as unknown;
const app = new Hono();
app.get('/v1/commands/:id', (c) => c.json(body));
serve({ fetch: app.fetch, port: Number(port), hostname: '127.0.0.1' }, () => console.log('listening'));
