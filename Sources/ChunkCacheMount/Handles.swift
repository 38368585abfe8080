import ChunkCache
import Synchronization

/// An open file: the item and the version it was opened at, which every read of the handle reads (an open
/// file never mixes versions, CONTRACT §13).
struct OpenFile: Sendable {
    let item: ItemIdentifier
    let version: ItemVersion
    let size: Int64
}

/// An open folder: where its listing continues. Listings are read a page at a time; the kernel's offsets
/// count entries, so the handle keeps the page token at each page's start and the page it read last.
struct OpenFolder: Sendable {
    let container: String
    /// The token of page `k` at index `k`; page 0 is the initial page.
    var pageStarts: [EnumerationPage] = [.initialPageSortedByName]
    /// The page read last and its number, for the sequential reads `readdir` makes.
    var lastPage: (number: Int, items: [ItemStatus], next: EnumerationPage?)?
}

/// Numbered handles for open files or folders.
final class Handles<Value: Sendable>: Sendable {
    private struct State {
        var open: [UInt64: Value] = [:]
        var next: UInt64 = 1
    }

    private let state = Mutex(State())

    func add(_ value: Value) -> UInt64 {
        state.withLock { state in
            let handle = state.next
            state.next += 1
            state.open[handle] = value
            return handle
        }
    }

    subscript(handle: UInt64) -> Value? {
        get { state.withLock { $0.open[handle] } }
        set { state.withLock { $0.open[handle] = newValue } }
    }

    func remove(_ handle: UInt64) { state.withLock { $0.open[handle] = nil } }

}

/// Read buffers kept for reuse: a fresh megabyte costs its page faults on every read (MEASURED: 214 µs for
/// a fresh buffer against 3 µs for a reused one), more than the read it serves.
final class ReadBuffers: Sendable {
    /// A buffer no one uses (`@unchecked Sendable`: only the list's lock reaches it).
    private struct Kept: @unchecked Sendable { let buffer: UnsafeMutableRawBufferPointer }
    private let free = Mutex<[Kept]>([])
    private let size: Int
    private let kept: Int

    /// Buffers of `size` bytes; at most `kept` are kept free.
    init(size: Int, kept: Int) {
        self.size = size
        self.kept = kept
    }

    /// A buffer of at least `count` bytes: a kept one when `count` fits, else a new one.
    func take(_ count: Int) -> UnsafeMutableRawBufferPointer {
        if count <= size, let kept = free.withLock({ $0.popLast() }) { return kept.buffer }
        return .allocate(byteCount: max(count, size), alignment: 64)
    }

    /// Gives a buffer back (or frees it when enough are kept).
    func give(_ buffer: UnsafeMutableRawBufferPointer) {
        let keep =
            buffer.count == size
            && free.withLock { list in
                guard list.count < kept else { return false }
                list.append(Kept(buffer: buffer))
                return true
            }
        if !keep { buffer.deallocate() }
    }
}

/// Reads of open files that timed out waiting for the origin, by handle. When a read-ahead the kernel sent
/// fails, the kernel reads the page the program wanted again, at once, as a read of its own: without this
/// it would wait a whole read timeout more, one bounded wait per read becoming two (CONTRACT §13). A read
/// that overlaps one that timed out on the same handle just before fails at once.
final class TimedOutReads: Sendable {
    private let failed = Mutex<[UInt64: (range: Range<Int64>, at: ContinuousClock.Instant)]>([:])
    /// How long a timeout answers the reads that overlap it: the kernel's retry comes at once.
    static let memory: Duration = .seconds(2)

    /// Notes that the read of `range` through `handle` timed out now.
    func note(_ handle: UInt64, _ range: Range<Int64>) {
        failed.withLock { $0[handle] = (range, .now) }
    }

    /// Whether a read of `range` through `handle` overlaps one that timed out within ``memory``.
    func justFailed(_ handle: UInt64, _ range: Range<Int64>) -> Bool {
        failed.withLock { failed in
            guard let last = failed[handle] else { return false }
            return last.range.overlaps(range) && ContinuousClock.now - last.at < Self.memory
        }
    }

    /// The handle was closed.
    func forget(_ handle: UInt64) { _ = failed.withLock { $0.removeValue(forKey: handle) } }
}
