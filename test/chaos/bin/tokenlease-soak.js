#!/usr/bin/env node
// Built to dist/ by `npm run build`; this stub lets npm link the command at install time.
import '../dist/soak-main.js';
