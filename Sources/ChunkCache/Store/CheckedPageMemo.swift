import LMDBKit
import Synchronization

/// The manifest pages that passed their check lately, so the same page read again in the same snapshot is
/// not checked again.
///
/// Sound because LMDB never changes a page a committed snapshot can see: every read transaction with one id
/// sees the same bytes at the same address, and a page is reused only after a later commit, whose readers
/// have a higher id. The address and length are part of the key, so a remapped file is checked afresh.
final class CheckedPageMemo: Sendable {
    struct Key: Hashable {
        let snapshot: Int
        let manifest: UInt64
        let page: Int64
        let address: UInt
        let count: Int

        init(snapshot: Int, manifest: UInt64, page: Int64, value: UnsafeRawBufferPointer) {
            self.snapshot = snapshot
            self.manifest = manifest
            self.page = page
            address = UInt(bitPattern: value.baseAddress)
            count = value.count
        }
    }

    /// Pages remembered: enough for the fetches a process runs at once.
    static let capacity = 16
    private let entries = Mutex<(keys: [Key], next: Int)>(([], 0))

    func contains(_ key: Key) -> Bool { entries.withLock { $0.keys.contains(key) } }

    func insert(_ key: Key) {
        entries.withLock { state in
            if state.keys.count < Self.capacity {
                state.keys.append(key)
            } else {
                state.keys[state.next] = key
                state.next = (state.next + 1) % Self.capacity
            }
        }
    }
}
