import FileIO
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `ThreadGroup`: the process a thread belongs to, as the mount names a reading program (CONTRACT §15).
@Suite struct ThreadGroupTests {
    @Test("§15: a thread of this process belongs to this process; no thread 0 or a gone one belongs to any")
    func processOfThread() {
        let seen = ThreadGroupProbe()
        // The thread stays until the checks are done: a thread that has ended has no /proc entry to read.
        let thread = Thread {
            seen.record(Self.currentThreadID())
            seen.holdUntilReleased()
        }
        thread.start()
        let tid = seen.wait()
        defer { seen.release() }
        #expect(tid != getpid(), "the spawned thread has its own id")
        #expect(ThreadGroup.process(ofThread: tid) == getpid())
        #expect(ThreadGroup.process(ofThread: getpid()) == getpid())
        #expect(ThreadGroup.process(ofThread: 0) == nil)
        #expect(ThreadGroup.process(ofThread: Int32.max) == nil)
    }

    /// The calling thread's id, from `/proc/thread-self` (`PID/task/TID`): Swift's Glibc has no `gettid`.
    static func currentThreadID() -> Int32 {
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return Int32(link.split(separator: "/").last ?? "") ?? -1
    }
}

/// A thread's id handed to the test, a wait for it, and the thread kept alive until the test lets it go.
private final class ThreadGroupProbe: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)
    private var id: Int32 = 0

    func holdUntilReleased() { released.wait() }

    func release() { released.signal() }

    func record(_ id: Int32) {
        self.id = id
        done.signal()
    }

    func wait() -> Int32 {
        done.wait()
        return id
    }
}
