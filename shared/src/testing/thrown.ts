/**
 * thrown — runs `run` and returns the error it throws, which must be an
 * instance of `errorClass`; throws a descriptive Error (failing the test)
 * when it throws something else or nothing.
 */
export function thrown<E extends Error>(errorClass: abstract new (...args: never[]) => E, run: () => unknown): E {
  try {
    run();
  } catch (error) {
    if (error instanceof errorClass) return error;
    throw new Error(`expected a ${errorClass.name}, got ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  }
  throw new Error(`expected a ${errorClass.name}, nothing was thrown`);
}
