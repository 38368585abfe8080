import Synchronization

/// The chunk ranges fetches of this process downloaded and will read (``PolicyProtection``), by fetch.
final class UnreadDownloads: Sendable {
    private let claims = Mutex<[UInt64: [(manifestID: UInt64, chunks: ClosedRange<Int64>)]]>([:])
    private let nextID = Atomic<UInt64>(0)

    /// One fetch's claim: what it adds stays spared until ``end()``. A value (no allocation on the warm path).
    struct Claim: Sendable {
        let owner: UnreadDownloads
        let id: UInt64

        /// Spares the chunks of `range` of `version` until the fetch ends.
        func protect(_ version: VersionRecord, _ range: ByteRange) {
            guard range.length > 0 else { return }
            let shift = version.layout.shift
            let chunks = (range.location >> shift)...((range.end - 1) >> shift)
            owner.claims.withLock { $0[id, default: []].append((version.manifestID, chunks)) }
        }

        /// The fetch is done: its chunks may go.
        func end() { _ = owner.claims.withLock { $0.removeValue(forKey: id) } }
    }

    func claim() -> Claim { Claim(owner: self, id: nextID.wrappingAdd(1, ordering: .relaxed).newValue) }

    var protection: PolicyProtection {
        claims.withLock { claims in
            var protection = PolicyProtection()
            for fetch in claims.values {
                for claim in fetch { protection.ranges[claim.manifestID, default: []].append(claim.chunks) }
            }
            return protection
        }
    }
}
