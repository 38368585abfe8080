import Synchronization

/// Values this process shares by key, each counted by its holders: the first ``acquire(_:join:make:)`` of a
/// key makes the value, later ones join it, and the last ``release(_:held:close:)`` takes it out and closes
/// it. One lock orders all three, so an acquire racing the last release either joins before the count
/// reaches zero or makes a new value after the old one is closed; never a second value beside a live one.
///
/// What it guarantees: at most one live value per key in the process; `make`, `join` and `close` run under
/// the lock, so they must be short and must not call back into the registry; any thread may call anything,
/// and nothing waits beyond the lock (no task suspends, none is cancelled).
///
/// The registry behind ``Environment`` (one `MDB_env` per directory) and the engine's open stores (one
/// store object per directory). It stays in LMDBKit, which cannot depend on ChunkCache: `Environment`
/// needs it below the engine, and the engine's store registry shares this one type rather than a copy in
/// the engine's `Concurrency/`.
package final class SharedHandles<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        let value: Value
        var holders: Int
    }

    private let entries = Mutex<[Key: Entry]>([:])

    package init() {}

    /// The value shared under `key`, counting the caller as one more holder: the one there, once `join`
    /// accepts it, else a new one from `make`. Both run under the lock; when either throws, nothing changes.
    package func acquire<Failure: Error>(
        _ key: Key, join: (Value) throws(Failure) -> Void, make: () throws(Failure) -> Value
    ) throws(Failure) -> Value {
        try entries.withLock { (entries) throws(Failure) -> Value in
            if var entry = entries[key] {
                try join(entry.value)
                entry.holders += 1
                entries[key] = entry
                return entry.value
            }
            let value = try make()
            entries[key] = Entry(value: value, holders: 1)
            return value
        }
    }

    /// The value shared under `key`, joining any there: ``acquire(_:join:make:)`` with nothing to check.
    package func acquire<Failure: Error>(_ key: Key, make: () throws(Failure) -> Value) throws(Failure) -> Value {
        try acquire(key, join: { (_) throws(Failure) in }, make: make)
    }

    /// Ends one holder's use of the value under `key`; the last one removes it and runs `close` on it, under
    /// the lock. Nothing happens unless `held` recognises the value there as the caller's: a holder of a value
    /// already removed does not count down its successor.
    package func release(_ key: Key, held: (Value) -> Bool, close: (Value) -> Void = { _ in }) {
        entries.withLock { entries in
            guard var entry = entries[key], held(entry.value) else { return }
            entry.holders -= 1
            guard entry.holders == 0 else {
                entries[key] = entry
                return
            }
            entries[key] = nil
            close(entry.value)
        }
    }

    /// Runs `body` under the lock with the number of holders of `key` (0 when none), so no holder comes or
    /// goes while it runs.
    package func withHolderCount<R, Failure: Error>(of key: Key, _ body: (Int) throws(Failure) -> R) throws(Failure)
        -> R
    {
        try entries.withLock { (entries) throws(Failure) -> R in try body(entries[key]?.holders ?? 0) }
    }

    /// The values whose key satisfies `isIncluded`, as they are now (a test's leak check reads them).
    package func values(where isIncluded: (Key) -> Bool) -> [Value] {
        entries.withLock { entries in entries.filter { isIncluded($0.key) }.map(\.value.value) }
    }
}
