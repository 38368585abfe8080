import Dispatch
import Synchronization
import Testing

@testable import FuseKit

#if canImport(Glibc)
import Glibc
#endif

/// A mount's replies after its session ended must not reach libfuse: by then the request's channel is closed
/// and the session's memory freed (a late reply printed "fuse: writing device: Bad file descriptor").
@Suite("§13 FuseKit's reply gate")
struct ReplyGateTests {
    @Test("replies pass while the session serves and none after it ended; the end waits for a reply under way")
    func gate() async throws {
        let gate = ReplyGate()
        let answered = Atomic<Int>(0)
        gate.pass { answered.add(1, ordering: .relaxed) }
        let first = answered.load(ordering: .relaxed)
        #expect(first == 1)

        // A reply that takes 200 ms is under way when the session ends: the end waits for it.
        let started = DispatchSemaphore(value: 0)
        let slowDone = Atomic<Bool>(false)
        DispatchQueue.global().async {
            gate.pass {
                started.signal()
                usleep(200_000)
                slowDone.store(true, ordering: .sequentiallyConsistent)
            }
        }
        started.wait()
        gate.close()
        let waited = slowDone.load(ordering: .sequentiallyConsistent)
        #expect(waited, "close() returned before the reply under way ended")

        gate.pass { answered.add(1, ordering: .relaxed) }
        let after = answered.load(ordering: .relaxed)
        #expect(after == 1, "a reply after the end went through")
    }
}
