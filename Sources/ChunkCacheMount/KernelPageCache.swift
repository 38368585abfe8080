import Dispatch
import FuseKit
import Synchronization

/// Gives the kernel the rest of each chunk a read decoded: the read widens to whole chunks, answers the
/// bytes asked, and the bytes around them go into the kernel's page cache, so the program's next reads in
/// the same chunks never reach the mount.
///
/// Why: a chunk is decoded whole whatever part of it is read, so a program reading 4 KiB pages scattered
/// over a file (a database) paid a 64 KiB decode and a round trip through the mount for each page; with the
/// chunk's other pages in the page cache it pays them once per chunk. A node's bytes never change (a new
/// version is a new node), so the pages given are never stale.
///
/// The pages go in on a queue of their own, after the read is answered: the kernel holds the pages of a read
/// in flight locked, and a store into them waits until that read is answered; a session thread that waited
/// there could wait for a read only it would answer. At most ``maxPending`` chunks wait; more are dropped,
/// as the pages are only a saving.
final class KernelPageCache: Sendable {
    private let session = Mutex<FuseSession?>(nil)
    private let queue = DispatchQueue(label: "chunkcache-mount-pages")
    private let pending = Atomic<Int>(0)
    /// Widened reads wait in buffers of their own: this bounds the memory they hold.
    static let maxPending = 8
    /// The kernel's page size: only whole pages are given (a part page would not count as read).
    static let pageSize: Int64 = 4096

    /// Starts giving pages to `session`; until then, and after ``detach()``, nothing is given.
    func attach(_ session: FuseSession) { self.session.withLock { $0 = session } }

    /// Stops giving pages: the session is ending.
    func detach() { session.withLock { $0 = nil } }

    /// The whole chunks around `offset..<offset+count` of a file of `size` bytes, when reading them costs
    /// at most `limit` bytes; else the range itself.
    static func span(offset: Int64, count: Int, size: Int64, chunkSize: Int64, limit: Int) -> Range<Int64> {
        let asked = offset..<(offset + Int64(count))
        let lower = offset / chunkSize * chunkSize
        let upper = min(size, (asked.upperBound + chunkSize - 1) / chunkSize * chunkSize)
        guard upper - lower <= Int64(limit), upper >= asked.upperBound else { return asked }
        return lower..<upper
    }

    /// Gives the kernel the first `count` bytes of `buffer` (the file's bytes from `start`, `size` its
    /// length) except `answered`, once the queue is free, then gives `buffer` back to `buffers`. Returns
    /// false, keeping nothing, when the pages are not wanted (nothing around the answered range, no session,
    /// or too many waiting): the buffer is then still the caller's.
    func give(
        node: UInt64, start: Int64, buffer: UnsafeMutableRawBufferPointer, count: Int, size: Int64,
        answered: Range<Int64>, returningTo buffers: ReadBuffers
    ) -> Bool {
        let parts = Self.pages(around: answered, in: start..<(start + Int64(count)), size: size)
        guard !parts.isEmpty, let session = session.withLock({ $0 }) else { return false }
        guard pending.add(1, ordering: .relaxed).newValue <= Self.maxPending else {
            pending.subtract(1, ordering: .relaxed)
            return false
        }
        let held = HeldBuffer(buffer: buffer)
        queue.async { [self] in
            for part in parts {
                let from = Int(part.lowerBound - start)
                session.store(
                    node: node, offset: part.lowerBound,
                    bytes: UnsafeRawBufferPointer(rebasing: held.buffer[from..<(from + Int(part.count))]))
            }
            pending.subtract(1, ordering: .relaxed)
            buffers.give(held.buffer)
        }
        return true
    }

    /// The whole pages of `read` outside `answered`: before it and after it. A part page counts only at the
    /// file's end, where the kernel takes it as whole.
    static func pages(around answered: Range<Int64>, in read: Range<Int64>, size: Int64) -> [Range<Int64>] {
        let before = read.lowerBound..<(max(read.lowerBound, answered.lowerBound) / pageSize * pageSize)
        var afterStart = (answered.upperBound + pageSize - 1) / pageSize * pageSize
        afterStart = max(afterStart, read.lowerBound)
        let afterEnd = read.upperBound == size ? size : read.upperBound / pageSize * pageSize
        var parts: [Range<Int64>] = []
        if before.lowerBound < before.upperBound { parts.append(before) }
        if afterStart < afterEnd { parts.append(afterStart..<afterEnd) }
        return parts
    }
}

/// A read's buffer on its way to the queue (`@unchecked Sendable`: only the queue touches it until it is
/// given back).
private struct HeldBuffer: @unchecked Sendable {
    let buffer: UnsafeMutableRawBufferPointer
}
