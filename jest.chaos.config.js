// The chaos suite (npm run test:chaos): real daemon processes and redis-servers, one file, run in band.
const base = require('./jest.config');
module.exports = { ...base, roots: ['<rootDir>/test/chaos'], testMatch: ['**/*.chaos.ts'], testTimeout: 120000 };
