#!/usr/bin/env node
// The operator CLI is built to dist/ by `npm run build`; this stub lets npm link the command at install time.
import '../dist/adapters/operator-cli.js';
