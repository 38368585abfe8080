import FileIO
import Foundation
import SeededRandom
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// The pieces a parallel fetch writes with: runs gathered into one `pwritev`, and work shared with helpers.
@Suite struct ParallelWriteTests {
    /// Writes drawn pieces, some decoded into staging and some borrowed, at offsets that sometimes follow
    /// each other and sometimes jump, with room for few vectors and runs, sometimes finding the gate taken:
    /// the file must hold exactly the model's bytes.
    @Test(
        "RunWriter writes every piece at its offset, across staging refills, jumps, full lists and a busy gate",
        arguments: [false, true])
    func runWriterMatchesModel(gated: Bool) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/runs"
            let file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
            defer { try? file.close() }
            let size = 1 << 20
            var model = [UInt8](repeating: 0, count: size)
            let staging = UnsafeMutableRawBufferPointer.allocate(byteCount: 3 * 4096, alignment: 4096)
            let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 6)
            let runStarts = UnsafeMutableBufferPointer<RunWriter.RunStart>.allocate(capacity: 3)
            let borrowed = TestData.random(count: size, seed: 7)
            defer {
                staging.deallocate()
                vectors.deallocate()
                runStarts.deallocate()
            }
            let gate = gated ? WriteGate() : nil
            var rng = SplitMix64(seed: 0xB0B)
            var writer = RunWriter(
                file: HandOffWriter(file: file, holesForZeros: false), gate: gate, staging: staging, vectors: vectors,
                runStarts: runStarts)
            var offset = 0
            var end = 0
            var pieces = 0
            var busyChecks = 0
            try borrowed.withUnsafeBytes { source in
                while true {
                    if Int.random(in: 0..<4, using: &rng) == 0 { offset += Int.random(in: 1...8192, using: &rng) }
                    let length = Int.random(in: 1...4096, using: &rng)
                    guard offset + length <= size else { break }
                    if Bool.random(using: &rng) {
                        let space = try writer.space(length, at: Int64(offset))
                        let fill = UInt8(truncatingIfNeeded: pieces)
                        space.initializeMemory(as: UInt8.self, repeating: fill)
                        try writer.append(UnsafeRawBufferPointer(space), at: Int64(offset))
                        for i in offset..<(offset + length) { model[i] = fill }
                    } else {
                        try writer.append(
                            UnsafeRawBufferPointer(rebasing: source[offset..<(offset + length)]), at: Int64(offset))
                        model.replaceSubrange(offset..<(offset + length), with: borrowed[offset..<(offset + length)])
                    }
                    offset += length
                    end = offset
                    pieces += 1
                    // Now and then another worker holds the gate: writeIfFree must keep the runs for later
                    // (offsets only grow, so a write would lengthen the file).
                    if let gate, Int.random(in: 0..<3, using: &rng) == 0 {
                        #expect(gate.enterIfFree())
                        let before = try file.status().st_size
                        try writer.writeIfFree()
                        #expect(try file.status().st_size == before)
                        gate.leave()
                        busyChecks += 1
                    } else {
                        try writer.writeIfFree()
                    }
                }
            }
            try writer.flush()
            #expect(!gated || busyChecks > 50)
            #expect(pieces > 300)
            let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(written.count == end)
            #expect(written == Array(model[..<end]))
        }
    }

    /// The caller always runs the job; when `run` returns nobody is inside it and nobody enters it later,
    /// so the job may use the caller's resources (its file, its snapshot) until then and no longer.
    @Test("SharedWork returns only when no helper is inside the job, and no helper enters it afterwards")
    func sharedWorkJoins() async throws {
        final class Round: Sendable {
            let inside = Atomic<Int>(0)
            let returned = Atomic<Bool>(false)
        }
        let lateEntries = Atomic<Int>(0)
        let helperRuns = Atomic<Int>(0)
        // 2,000 rounds, and more until a helper has joined one: beside other suites the pool's threads can all
        // be busy for the first 2,000 (it failed so once, on CI), and the check below needs one to have joined.
        let deadline = ContinuousClock.now + .seconds(30)
        var number = 0
        while number < 2_000 || (helperRuns.load(ordering: .relaxed) == 0 && ContinuousClock.now < deadline) {
            defer { number += 1 }
            let pauses = number % 2 == 0
            let round = Round()
            let callerThread = pthread_self()
            SharedWork.run(helpers: 1) {
                round.inside.wrappingAdd(1, ordering: .sequentiallyConsistent)
                if round.returned.load(ordering: .sequentiallyConsistent) {
                    lateEntries.wrappingAdd(1, ordering: .relaxed)
                }
                if pthread_equal(pthread_self(), callerThread) == 0 { helperRuns.wrappingAdd(1, ordering: .relaxed) }
                if pauses { usleep(20) }
                round.inside.wrappingSubtract(1, ordering: .sequentiallyConsistent)
            }
            round.returned.store(true, ordering: .sequentiallyConsistent)
            #expect(round.inside.load(ordering: .sequentiallyConsistent) == 0)
        }
        // Helpers that wake late must skip the job: give the last ones time to wake, then check none ran it.
        try await Task.sleep(for: .milliseconds(200))
        #expect(lateEntries.load(ordering: .relaxed) == 0)
        #expect(helperRuns.load(ordering: .relaxed) > 0, "no helper ever joined in \(number) rounds")
    }
}
