import Foundation
import OriginKit
import Synchronization
import Testing

@testable import ChunkCache

/// The pure rules of the cold path (CONTRACT §10): read-ahead, request ranges, single flight and depth.
@Suite struct ColdPathUnitTests {
    static let chunk: Int64 = 64 << 10
    static let limit: Int64 = 4 << 20

    @Test(
        "§10 §12 a chunk that vanished between fill and read is filled again from the same plan, up to a budget: past it the fetch is transient and names the bound; the origin may move on twice"
    )
    func coldRoundsGoOneWay() {
        var rounds = ColdRounds(item: ItemIdentifier(domain: "web", "a.bin"))
        for _ in 0..<ColdRounds.maxRefills { #expect(throws: Never.self) { try rounds.refill() } }
        do {
            try rounds.refill()
            Issue.record("a refill past the budget was allowed")
        } catch {
            #expect(error.code == .transient)
            #expect(
                error.message.contains("--max-size") && error.message.contains("\(ColdRounds.maxRefills + 1) times"))
        }
        // Damaged chunks: each is replaced once, however many (a crash may lose every fill of a file).
        for index in 0..<20 {
            #expect(throws: Never.self) { try rounds.replace(DamagedChunk(index: Int64(index), digest: nil)) }
        }
        do {
            try rounds.replace(DamagedChunk(index: 7, digest: nil))
            Issue.record("a chunk replaced twice was allowed")
        } catch {
            #expect(error.code == .transient && error.message.contains("damaged again"))
        }
        #expect(throws: Never.self) { try rounds.change() }
        #expect(throws: Never.self) { try rounds.change() }
        do {
            try rounds.change()
            Issue.record("a third change was allowed")
        } catch {
            #expect(error.code == .transient && error.message.contains("kept changing"))
        }
    }

    @Test("§10 A19: a domain whose session read-ahead could not make is not tried again by each warm fetch")
    func readAheadRemembersAnUnavailableSession() {
        let sessions = OriginSessions()
        let attempts = Atomic<Int>(0)
        for _ in 0..<3 {
            let session = sessions.sessionForReadAhead("s3") {
                attempts.add(1, ordering: .relaxed)
                throw CacheError(.notAuthenticated, "no credentials")
            }
            #expect(session == nil)
        }
        #expect(attempts.load(ordering: .relaxed) == 1, "made once, then remembered as unavailable")
    }

    @Test(
        "§10: a read-ahead state kept in the store continues the sequence; damaged or out-of-range bytes are no state"
    )
    func readAheadKeptInTheStore() {
        var state = ReadAhead()
        _ = state.advance(fetching: 0..<Self.chunk, size: 1 << 30, limit: Self.limit)
        var resumed = state.stored.withUnsafeBytes { ReadAhead(stored: $0) }
        #expect(resumed == state)
        #expect(
            resumed?.advance(fetching: Self.chunk..<(2 * Self.chunk), size: 1 << 30, limit: Self.limit) != nil,
            "the next process's fetch continues the sequence")
        #expect(Array(repeating: UInt8(0), count: 31).withUnsafeBytes { ReadAhead(stored: $0) } == nil, "too short")
        #expect(
            Array(repeating: UInt8(0xff), count: 32).withUnsafeBytes { ReadAhead(stored: $0) } == nil,
            "negative offsets")
        let huge = (0..<4).flatMap { _ in withUnsafeBytes(of: UInt64(Int64.max).bigEndian, Array.init) }
        #expect(
            huge.withUnsafeBytes { ReadAhead(stored: $0) } == nil,
            "offsets past the largest item would overflow the window")
    }

    @Test("A19: a random fetch reads nothing ahead; fetches in order read ahead a window that doubles to the limit")
    func readAheadWindow() {
        var state = ReadAhead()
        let size: Int64 = 1 << 30
        #expect(
            state.advance(fetching: 0..<Self.chunk, size: size, limit: Self.limit) == nil,
            "the first fetch is not yet a sequence")
        let first = state.advance(fetching: Self.chunk..<(2 * Self.chunk), size: size, limit: Self.limit)
        #expect(
            first == (2 * Self.chunk)..<(2 * Self.chunk + Self.limit / 4), "the window starts at a quarter of the limit"
        )
        // Reading on inside the window asks for nothing until less than half of it is left ahead.
        var offset = 2 * Self.chunk
        var requested: [Range<Int64>] = first.map { [$0] } ?? []
        while offset < 64 << 20 {
            if let ahead = state.advance(fetching: offset..<(offset + Self.chunk), size: size, limit: Self.limit) {
                #expect(ahead.lowerBound == requested.last?.upperBound, "read-ahead continues where it stopped")
                #expect(Int64(ahead.count) <= Self.limit)
                requested.append(ahead)
            }
            offset += Self.chunk
        }
        #expect(requested.count <= 64 / 2 + 2, "about one request per half window: \(requested.count)")
        #expect(requested.dropFirst(3).allSatisfy { Int64($0.count) >= Self.limit / 2 })
        #expect(
            state.advance(fetching: (100 << 20)..<((100 << 20) + Self.chunk), size: size, limit: Self.limit) == nil,
            "a jump resets the window")
    }

    @Test("A19: a fetch that starts before the last one started is out of order, even when it reaches past its end")
    func fetchFromBeforeTheLastOneIsOutOfOrder() {
        var state = ReadAhead()
        let size = 32 * Self.chunk
        _ = state.advance(fetching: (9 * Self.chunk)..<(11 * Self.chunk), size: size, limit: Self.limit)
        _ = state.advance(fetching: (5 * Self.chunk)..<(6 * Self.chunk), size: size, limit: Self.limit)
        #expect(state.advance(fetching: 0..<(16 * Self.chunk), size: size, limit: Self.limit) == nil)
        #expect(
            state.advance(fetching: (15 * Self.chunk)..<(17 * Self.chunk), size: size, limit: Self.limit) != nil,
            "a fetch that overlaps the last one's end continues it")
    }

    @Test("§10: the same range fetched again (concurrent readers) neither reads ahead nor breaks the sequence")
    func repeatedRange() {
        var state = ReadAhead()
        _ = state.advance(fetching: 0..<Self.chunk, size: 1 << 30, limit: Self.limit)
        #expect(state.advance(fetching: 0..<Self.chunk, size: 1 << 30, limit: Self.limit) == nil)
        #expect(
            state.advance(fetching: Self.chunk..<(2 * Self.chunk), size: 1 << 30, limit: Self.limit) != nil,
            "still a sequence")
        #expect(state.advance(fetching: Self.chunk..<(2 * Self.chunk), size: 1 << 30, limit: Self.limit) == nil)
    }

    @Test("§10: read-ahead stops at the end of the file and is off with a zero limit")
    func readAheadBounds() {
        var state = ReadAhead()
        _ = state.advance(fetching: 0..<Self.chunk, size: 3 * Self.chunk, limit: Self.limit)
        #expect(
            state.advance(fetching: Self.chunk..<(2 * Self.chunk), size: 3 * Self.chunk, limit: Self.limit)
                == (2 * Self.chunk)..<(3 * Self.chunk))
        var off = ReadAhead()
        _ = off.advance(fetching: 0..<Self.chunk, size: 1 << 30, limit: 0)
        #expect(off.advance(fetching: Self.chunk..<(2 * Self.chunk), size: 1 << 30, limit: 0) == nil)
    }

    @Test(
        "A16 §10: a fetch's Progress counts only its retrieved range's bytes: read-ahead's in the same response do not move it"
    )
    func progressCountsOnlyTheRange() {
        let fetch = FetchProgress(expecting: ByteRange(location: Self.chunk, length: 2 * Self.chunk))
        let counters = DownloadProgress(forwardingTo: nil, reporting: fetch)
        #expect(fetch.progress.totalUnitCount == 2 * Self.chunk, "determinate from the start")
        counters.received(Int(Self.chunk), at: 0)
        #expect(fetch.progress.completedUnitCount == 0, "before the range")
        counters.received(Int(Self.chunk) + 100, at: Self.chunk)
        counters.received(Int(Self.chunk) - 100 + 4096, at: 2 * Self.chunk + 100)
        #expect(fetch.progress.completedUnitCount == 2 * Self.chunk, "the range's bytes, not the 4 KiB after it")
        counters.received(Int(Self.chunk), at: 3 * Self.chunk)
        #expect(fetch.progress.completedUnitCount == 2 * Self.chunk)
        #expect(counters.downloadedBytes == 4 * Self.chunk + 4096, "the counters count every byte received")
    }

    @Test(
        "A12 §10: a non-strict discovery pins a VersionId (a versioned bucket serves old versions by it), never an ETag; a strict one pins either"
    )
    func discoveryPinsOnlyWhatTheOriginServesByName() {
        let s3 = OriginEndpoint(location: .s3(endpoint: "http://127.0.0.1:9", region: "r", bucket: "b", prefix: ""))
            .makeOrigin()
        let http = OriginEndpoint(location: .http(base: "http://127.0.0.1:9/")).makeOrigin()
        let versionID = Array("3sL4kqtJlcpXroDTDmJ-rmSpXd3dIbrHY".utf8)
        let etag = Array("\"5f1d-61a\"".utf8)
        #expect(ChunkCache.discoveryPin(versionID, strict: false, origin: s3) == versionID)
        #expect(ChunkCache.discoveryPin(etag, strict: false, origin: s3) == nil, "an unversioned bucket's ETag")
        #expect(ChunkCache.discoveryPin(etag, strict: false, origin: http) == nil)
        #expect(ChunkCache.discoveryPin(etag, strict: true, origin: http) == etag)
        #expect(ChunkCache.discoveryPin(versionID, strict: true, origin: s3) == versionID)
        #expect(ChunkCache.discoveryPin(nil, strict: false, origin: s3) == nil)
    }

    @Test("§10: a discovery GET asks for the aligned range, at least one chunk, at most 8 MiB")
    func discoveryRange() {
        let range = { (location: Int64, length: Int64, alignment: Int) in
            ColdFill.discoveryRange(
                ByteRange(location: location, length: length), alignment: alignment, chunkSize: Self.chunk)
        }
        #expect(range(131_072 + 10, 100, 4096) == 131_072..<196_608)
        #expect(range(0, 0, 1) == 0..<Self.chunk)
        #expect(range(1 << 20, 100 << 20, 4096) == (1 << 20)..<(9 << 20))
        #expect(range(Int64.max - 10, 100, 4096).lowerBound <= Int64.max - 10, "no overflow near the end of Int64")
        #expect(ColdFill.discoveryRange(nil, alignment: 1, chunkSize: Self.chunk) == 0..<(8 << 20))
    }

    @Test("§10: adjacent absent chunks go in one request of at most 8 MiB; gaps split requests")
    func runs() {
        let chunks = ([0, 1, 2, 5, 6] + Array(10..<300)).map {
            ClaimedChunk(index: Int64($0), flight: Flight(), expected: nil)
        }
        let runs = ColdFill.runs(of: chunks.shuffled(), chunkShift: 16).map { $0.map(\.index) }
        #expect(runs.count == 5)
        #expect(runs[0] == [0, 1, 2] && runs[1] == [5, 6])
        #expect(runs[2].count == 128 && runs[2].first == 10, "8 MiB of 64 KiB chunks")
        #expect(runs[3].count == 128 && runs[4].count == 290 - 256)
    }

    @Test("§10 single flight: the first claim downloads, later ones wait for its outcome, then the key is free again")
    func singleFlight() async throws {
        let flights = Flights<Int>()
        let (flight, claimed) = flights.claim(7)
        let (same, again) = flights.claim(7)
        #expect(claimed && !again && flight === same)
        async let waited: Void = same.wait()
        flights.finish(7, flight, with: .success(()))
        try await waited
        #expect(flights.claim(7).claimed, "a finished flight is forgotten")
        let failing = flights.claim(8).flight
        flights.finish(8, failing, with: .failure(CacheError(.transient, "x")))
        await #expect(throws: CacheError.self) { try await failing.wait() }
    }

    @Test("§10 cancellation: a cancelled waiter stops waiting at once; the flight goes on for the others")
    func cancelledWaiter() async throws {
        let flight = Flight()
        let waiter = Task { try await flight.wait() }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        async let other: Void = flight.wait()
        flight.finish(.success(()))
        try await other
    }

    @Test("§10 pipeline depth: at most `limit` bodies run at once, all run")
    func depth() async throws {
        let limiter = AsyncLimiter(limit: 3)
        let counter = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await limiter.withPermit {
                        counter.enter()
                        try await Task.sleep(for: .milliseconds(2))
                        counter.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(counter.peak == 3 && counter.total == 20)
    }
}

private final class Counter: Sendable {
    private let state = Mutex<(now: Int, peak: Int, total: Int)>((0, 0, 0))
    var peak: Int { state.withLock { $0.peak } }
    var total: Int { state.withLock { $0.total } }
    func enter() {
        state.withLock {
            $0.now += 1
            $0.peak = max($0.peak, $0.now)
            $0.total += 1
        }
    }
    func leave() { state.withLock { $0.now -= 1 } }
}
