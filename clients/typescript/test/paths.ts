// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

import { fileURLToPath } from 'node:url';
import path from 'node:path';

// Tests run compiled, from build/test: the package's root is two folders up, the repository's two more.
export const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const repoRoot = path.resolve(packageRoot, '..', '..');
