import Synchronization

/// The first of several values offered, from any thread: a job's first failure, the first damaged chunk its
/// workers find. A value, held inline by the type that shares it (no allocation of its own); nothing waits
/// for it: to wait, use ``SetOnce``.
///
/// What it guarantees: only the first ``offer(_:)`` counts and returns true; later ones change nothing. Any
/// thread may offer or read; one lock orders them, so a read after an offer returned sees a value.
struct FirstValue<Value: Sendable>: ~Copyable, Sendable {
    private let value = Mutex<Value?>(nil)

    init() {}

    /// Keeps `offered` unless a value was kept; returns whether this call kept it.
    @discardableResult
    func offer(_ offered: Value) -> Bool {
        value.withLock { value in
            guard value == nil else { return false }
            value = offered
            return true
        }
    }

    /// The value kept, if any.
    var current: Value? { value.withLock { $0 } }
}
