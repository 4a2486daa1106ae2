#!/usr/bin/env node
// The CLI is built to dist/ by `npm run build`; this stub lets npm link the command at install time.
import '../dist/adapters/relay-cli.js';
