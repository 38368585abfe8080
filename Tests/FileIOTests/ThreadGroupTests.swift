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
        let thread = Thread { seen.record(Self.currentThreadID()) }
        thread.start()
        let tid = seen.wait()
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

/// A thread's id handed to the test, and a wait for it.
private final class ThreadGroupProbe: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var id: Int32 = 0

    func record(_ id: Int32) {
        self.id = id
        done.signal()
    }

    func wait() -> Int32 {
        done.wait()
        return id
    }
}
