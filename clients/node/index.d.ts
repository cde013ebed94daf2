// Types for the nxlock helpers (index.js).

/** One run of `nxlock explore --exec`, as this client is told it. */
export interface Run {
  /** This client's number, from 0. */
  client: number;
  /** How many clients run. */
  clients: number;
  /** redis:// URL of this client's port (on Redlock, on the first node). */
  url: string;
  /** This client's URL of every node (Redlock's nodes, a cluster's shards). */
  nodes: string[];
  /** How many cycles to run. */
  cycles: number;
  /** The TTL to use, in milliseconds. */
  ttlMs: number;
  /** How many replicas the primary behind `url` has (for WAIT). */
  replicas: number;
}

/** How long a lock keeps its holder alone: a deadline on the monotonic clock (ms), or ms from now. */
export interface Validity {
  deadline?: number;
  px?: number;
}

export interface EnterOptions extends Validity {
  fence?: number;
}

export interface SectionOptions extends EnterOptions {
  /** The lock key and the token this client holds it with. */
  holds?: [string, string];
}

export interface Section {
  extend(validity: Validity): Promise<unknown>;
  write(fence: number): Promise<boolean>;
}

export interface Increment {
  done(): Promise<unknown>;
  failed(): Promise<unknown>;
}

export class Markers {
  constructor(client: unknown, options?: { enabled?: boolean });
  enabled: boolean;
  send(...args: Array<string | number>): Promise<unknown>;
  holds(key: string, token: string): Promise<unknown>;
  enter(resource: string, options?: EnterOptions): Promise<unknown>;
  extend(resource: string, validity: Validity): Promise<unknown>;
  exit(resource: string): Promise<unknown>;
  write(resource: string, fence: number): Promise<boolean>;
  permanent(prefix: string): Promise<unknown>;
  counterKey(counter: string, key: string): Promise<unknown>;
  section<T>(resource: string, options: SectionOptions, body: (section: Section) => Promise<T>): Promise<T>;
  increment(counter: string): Increment;
}

/** The markers of one client (ioredis or node-redis), sent on its connection. */
export function markers(client: unknown, options?: { enabled?: boolean }): Markers;
/** The host's monotonic clock, in milliseconds. */
export function monotonic(): number;
/** Where a validity of `ms` ends on the monotonic clock, counted from `start` (default: now). */
export function deadline(ms: number, start?: number): number;
/** Each run this process serves. */
export function runs(): AsyncIterableIterator<Run>;

/** A running `nxlock serve` (see `startServer`). */
export interface Server {
  /** `redis://127.0.0.1:PORT`. */
  url: string;
  /** Sends one command on the helper's own connection. */
  command(...args: Array<string | number>): Promise<unknown>;
  /** Moves the server's clock `ms` ahead: every TTL runs down at once. */
  fastforward(ms: number): Promise<unknown>;
  /**
   * Faults the clients named `clientName` (ioredis's `connectionName`): `"delay"` holds
   * each command `ms` on the server's clock (until cleared), `"disconnect"` closes the
   * connection before the command runs, `"lose-reply"` runs it and closes the connection
   * unanswered (one command each, unless `count` says how many).
   */
  fault(
    clientName: string,
    kind: "delay" | "disconnect" | "lose-reply",
    options?: { ms?: number; count?: number },
  ): Promise<unknown>;
  /** Ends the fault of `clientName`, or every fault. */
  clearFaults(clientName?: string): Promise<unknown>;
  /** Empties every database and ends every fault. */
  flush(): Promise<unknown>;
  /** Stops the server. */
  stop(): Promise<void>;
}

/**
 * Starts `nxlock serve` on a free loopback port (NXLOCK_BIN, else the binary bundled in
 * the package, else `nxlock` on PATH).
 */
export function startServer(options?: { redisVersion?: string; cluster?: boolean }): Promise<Server>;

/** Options of `explore`. */
export interface ExploreOptions {
  runs?: number;
  clients?: number;
  cycles?: number;
  seed?: number;
  longLived?: boolean;
  faults?: string[];
  extra?: string[];
}

/**
 * Runs `command` under `nxlock explore --exec`: resolves to the report when the search is
 * clean, rejects with the counterexample when it finds a violation of the lock's own.
 */
export function explore(command: string, options?: ExploreOptions): Promise<Record<string, unknown>>;
