import Synchronization

/// Claims that holders add to and end, and a view of all that stand: what this process's fetches still need,
/// which eviction spares (``UnreadDownloads``).
///
/// What it guarantees:
/// - **A claim stands from ``Claim/add(_:)`` to ``Claim/end()``.** ``entries`` returns every entry added and
///   not ended before the call, in no promised order; what is added or ended during the call may or may not
///   be in it. An entry added after its claim ended is kept until the claim ends again, so end once, last.
/// - Any thread or task may claim, add, end or read at once: one lock orders them, and none blocks beyond it.
/// - A claim costs no allocation until its first entry (a value, not an object): the warm path adds none.
final class ClaimTable<Entry: Sendable>: Sendable {
    private let claims = Mutex<[UInt64: [Entry]]>([:])
    private let lastID = Atomic<UInt64>(0)

    init() {}

    /// One holder's claim.
    struct Claim: Sendable {
        fileprivate let table: ClaimTable
        fileprivate let id: UInt64

        /// Adds `entry` to this claim, until ``end()``.
        func add(_ entry: Entry) { table.claims.withLock { $0[id, default: []].append(entry) } }

        /// Ends this claim: its entries stand no longer.
        func end() { _ = table.claims.withLock { $0.removeValue(forKey: id) } }
    }

    /// A new, empty claim.
    func claim() -> Claim { Claim(table: self, id: lastID.wrappingAdd(1, ordering: .relaxed).newValue) }

    /// The entries of every claim that stands now.
    var entries: [Entry] { claims.withLock { Array($0.values.joined()) } }
}
