import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SigV4
import Synchronization
import TestSupport
import Testing

@testable import OriginKit

/// What a read handed its caller: the `object` calls and the delivered bytes, in the order they came.
private final class Received: Sendable {
    private let objects = Mutex<[RemoteObject]>([])
    private let pieces = Mutex<[(offset: Int64, bytes: [UInt8])]>([])

    @Sendable func object(_ object: RemoteObject) {
        objects.withLock { $0.append(object) }
    }

    @Sendable func deliver(_ offset: Int64, _ bytes: RemoteBytes) throws {
        pieces.withLock { $0.append((offset, bytes.withUnsafeBytes { Array($0) })) }
    }

    var told: [RemoteObject] { objects.withLock { $0 } }

    /// Whether the deliveries came in ascending order, none overlapping the one before.
    var inOrder: Bool {
        let pieces = pieces.withLock { $0 }
        return zip(pieces, pieces.dropFirst()).allSatisfy { $0.offset + Int64($0.bytes.count) <= $1.offset }
    }

    /// The delivered bytes, touching deliveries joined.
    var runs: [Run] { Run.joined(pieces.withLock { $0 }) }
}

/// Bytes at an item offset.
private struct Run: Equatable, CustomStringConvertible {
    let offset: Int64
    var bytes: [UInt8]

    var description: String { "\(bytes.count) bytes at \(offset)" }

    /// `pieces` with touching ones joined.
    static func joined(_ pieces: [(offset: Int64, bytes: [UInt8])]) -> [Run] {
        var runs: [Run] = []
        for piece in pieces {
            if let last = runs.last, last.offset + Int64(last.bytes.count) == piece.offset {
                runs[runs.count - 1].bytes += piece.bytes
            } else {
                runs.append(Run(offset: piece.offset, bytes: piece.bytes))
            }
        }
        return runs
    }

    /// What a read of `ranges` of `file` must deliver: each range clamped to the file, touching ones joined.
    static func expected(_ ranges: [Range<Int64>], of file: [UInt8]) -> [Run] {
        let size = Int64(file.count)
        return joined(
            ranges.compactMap { range in
                let clamped = range.clamped(to: 0..<size)
                return clamped.isEmpty
                    ? nil : (clamped.lowerBound, Array(file[Int(clamped.lowerBound)..<Int(clamped.upperBound)]))
            })
    }
}

/// Bodies of `multipart/byteranges` as servers send them.
private enum Multipart {
    static let boundary = "00000000000000000001"
    static let contentType = "multipart/byteranges; boundary=\(boundary)"

    /// nginx's layout: a CRLF, then per part a delimiter, `Content-Type`, `Content-Range`, a blank line and
    /// the bytes; the close delimiter last. `padding` goes after each delimiter, before its CRLF.
    static func body(_ parts: [Range<Int64>], of file: [UInt8], padding: String = "") -> [UInt8] {
        var body = Array("\r\n".utf8)
        for part in parts {
            body += Array(
                ("--\(boundary)\(padding)\r\nContent-Type: application/octet-stream\r\n"
                    + "Content-Range: bytes \(part.lowerBound)-\(part.upperBound - 1)/\(file.count)\r\n\r\n").utf8)
            body += file[Int(part.lowerBound)..<Int(part.upperBound)]
            body += Array("\r\n".utf8)
        }
        return body + Array("--\(boundary)--\r\n".utf8)
    }

    /// Feeds `pieces` to a parser and returns the parts it gave, each with its bytes.
    static func parse(_ pieces: [ArraySlice<UInt8>], contentType: String = contentType) throws -> (
        parts: [(range: Range<Int64>, bytes: [UInt8])], complete: Bool
    ) {
        var parser = try MultipartByteranges(contentType: contentType)
        var parts: [(range: Range<Int64>, bytes: [UInt8])] = []
        for piece in pieces {
            for event in try parser.feed(ByteBuffer(bytes: piece)) {
                switch event {
                case .part(let range): parts.append((range.range!, []))
                case .bytes(let bytes): parts[parts.count - 1].bytes += bytes.readableBytesView
                }
            }
        }
        return (parts, parser.isComplete)
    }

    /// `bytes` cut into pieces of 1…`longest` bytes, their lengths drawn from `seed`.
    static func pieces(of bytes: [UInt8], longest: Int, seed: UInt64) -> [ArraySlice<UInt8>] {
        let draws = TestData.random(count: bytes.count, seed: seed)
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        for draw in draws where start < bytes.count {
            let end = min(bytes.count, start + 1 + Int(draw) % longest)
            pieces.append(bytes[start..<end])
            start = end
        }
        return pieces
    }
}

/// The multipart reader and the bookkeeping of a multi-range read, without a server (CONTRACT §10).
@Suite struct ManyRangeParsingTests {
    private let file = TestData.random(count: 2000, seed: 29)
    private let parts: [Range<Int64>] = [0..<10, 100..<356, 1990..<2000]

    private var expectedParts: [(range: Range<Int64>, bytes: [UInt8])] {
        parts.map { ($0, Array(file[Int($0.lowerBound)..<Int($0.upperBound)])) }
    }

    @Test("§10: a multipart/byteranges body split at any byte gives each part's Content-Range and exactly its bytes")
    func splitAnywhere() throws {
        for padding in ["", " \t "] {
            let body = Multipart.body(parts, of: file, padding: padding)
            for cut in 0...body.count {
                let parsed = try Multipart.parse([body[..<cut], body[cut...]])
                #expect(parsed.complete, "cut at \(cut)")
                #expect(parsed.parts.map(\.range) == parts, "cut at \(cut)")
                #expect(parsed.parts.map(\.bytes) == expectedParts.map(\.bytes), "cut at \(cut)")
            }
        }
    }

    @Test("§10: a multipart/byteranges body in random-sized pieces gives exactly the parts' bytes")
    func randomPieces() throws {
        let body = Multipart.body(parts, of: file)
        for seed in UInt64(1)...64 {
            let parsed = try Multipart.parse(Multipart.pieces(of: body, longest: seed % 2 == 0 ? 7 : 300, seed: seed))
            #expect(parsed.complete && parsed.parts.map(\.range) == parts, "seed \(seed)")
            #expect(parsed.parts.map(\.bytes) == expectedParts.map(\.bytes), "seed \(seed)")
        }
    }

    @Test("§10: a body cut before its close delimiter is incomplete; the boundary may be quoted; a preamble is skipped")
    func incompleteQuotedPreamble() throws {
        let body = Multipart.body(parts, of: file)
        #expect(try !Multipart.parse([body.dropLast(5)]).complete)
        let quoted = try Multipart.parse(
            [body[...]], contentType: "Multipart/ByteRanges;charset=x; boundary=\"\(Multipart.boundary)\"")
        #expect(quoted.complete && quoted.parts.map(\.range) == parts)
        let preamble = try Multipart.parse([Array("ignored text\r\n".utf8)[...] + body[2...]])
        #expect(preamble.complete && preamble.parts.map(\.bytes) == expectedParts.map(\.bytes))
    }

    @Test(
        "§10: a malformed multipart body is refused, naming the fault",
        arguments: [
            ("multipart/byteranges", "\r\n--b--", "names no boundary"),
            ("multipart/byteranges; boundary=", "\r\n--b--", "names no boundary"),
            ("multipart/byteranges; boundary=b", "--b\r\nContent-Type: x\r\n\r\nabc", "has no Content-Range"),
            ("multipart/byteranges; boundary=b", "--b\r\nContent-Range: bytes 0-99/50\r\n\r\n", "is not bytes"),
            ("multipart/byteranges; boundary=b", "--b\r\nContent-Range: bytes */50\r\n\r\n", "is not bytes"),
            ("multipart/byteranges; boundary=b", "--b\r\nContent-Range: bytes 0-1/5\r\n\r\nabc\r\n--b", "runs on past"),
            (
                "multipart/byteranges; boundary=b", "--b junk\r\nContent-Range: bytes 0-1/5\r\n\r\nab",
                "more than blanks"
            ),
            (
                "multipart/byteranges; boundary=b",
                "--b\r\nContent-Range: bytes 0-1/5\r\n\r\nab\r\n--b\r\nContent-Range: bytes 3-3/6\r\n\r\nc",
                "both 5 and 6"
            ),
        ])
    func malformed(contentType: String, body: String, fault: String) throws {
        do {
            _ = try Multipart.parse([Array(body.utf8)[...]], contentType: contentType)
            Issue.record("\(body.prefix(60)) parsed")
        } catch let error as MultipartByteranges.Malformed {
            #expect(error.detail.contains(fault), "\(error.detail)")
        }
    }

    @Test("§10: a preamble or part head that never ends is refused once it passes 16 KiB, not held without bound")
    func endlessHead() throws {
        for body in ["", "--\(Multipart.boundary)\r\nContent-Type: x\r\n"] {
            let endless = Array((body + String(repeating: "no end ", count: 3000)).utf8)
            let error = #expect(throws: MultipartByteranges.Malformed.self) {
                try Multipart.parse(Multipart.pieces(of: endless, longest: 1000, seed: 1))
            }
            #expect(error?.detail.contains("within 16384 bytes") == true)
        }
    }

    @Test("§10: a part head ending at 16 KiB is taken and one a byte longer refused, whole or a byte at a time")
    func headLimitWhateverTheCuts() throws {
        let file = TestData.random(count: 100, seed: 3)
        // The first part's head padded with a long header until its blank line ends at byte `end`.
        func body(headEndingAt end: Int) -> [UInt8] {
            let start = Array("\r\n--\(Multipart.boundary)\r\nContent-Range: bytes 0-9/100\r\nX: ".utf8)
            let headerEnd = Array("\r\n\r\n".utf8)
            // The head counts from after the delimiter (its first 2 + 2 + boundary bytes are the delimiter).
            let delimiter = 4 + Multipart.boundary.utf8.count
            let filler = end - (start.count - delimiter) - headerEnd.count
            return start + [UInt8](repeating: UInt8(ascii: "x"), count: filler) + headerEnd + file[0..<10]
                + Array("\r\n--\(Multipart.boundary)--\r\n".utf8)
        }
        for (end, taken) in [(MultipartByteranges.longestHead, true), (MultipartByteranges.longestHead + 1, false)] {
            let bytes = body(headEndingAt: end)
            for pieces in [[bytes[...]], Multipart.pieces(of: bytes, longest: 1, seed: 1)] {
                let parsed = try? Multipart.parse(pieces)
                #expect((parsed?.parts.map(\.bytes) == [Array(file[0..<10])]) == taken, "head ending at \(end)")
            }
        }
    }

    @Test(
        "§10: a damaged multipart body is taken whole or refused as malformed, and a part never gives other than its bytes"
    )
    func damagedBodies() throws {
        let body = Multipart.body(parts, of: file)
        var refused = 0
        for seed in UInt64(1)...300 {
            // Three bytes changed where the seed says, the body fed in pieces the seed cuts.
            let draws = TestData.random(count: 9, seed: seed)
            var damaged = body
            for index in 0..<3 {
                let position = Int(UInt32(draws[3 * index]) << 8 | UInt32(draws[3 * index + 1])) % body.count
                damaged[position] = draws[3 * index + 2]
            }
            do {
                let parsed = try Multipart.parse(Multipart.pieces(of: damaged, longest: 50, seed: seed))
                for part in parsed.parts.dropLast() {
                    #expect(part.bytes.count == part.range.count, "seed \(seed)")
                }
                if let last = parsed.parts.last { #expect(last.bytes.count <= last.range.count, "seed \(seed)") }
            } catch is MultipartByteranges.Malformed {
                refused += 1
            }
        }
        #expect(refused > 0, "some damage lands in a delimiter or a header")
    }

    @Test("§10: the ranges of a multi-range read must be non-empty, sorted and disjoint; the fault is named")
    func rangeListChecked() async throws {
        let origin = OriginEndpoint(location: .http(base: "http://127.0.0.1:1/")).makeOrigin()
        let faults: [([Range<Int64>], String)] = [
            ([], "no range was given"), ([0..<10, 5..<20], "5..<20 comes after 0..<10"),
            ([10..<20, 0..<5], "0..<5 comes after 10..<20"), ([0..<10, 12..<12], "12..<12 is empty"),
            ([-4..<10], "starts before byte 0"),
        ]
        for (ranges, fault) in faults {
            // Port 1 refuses: a request sent would fail as unreachable, not as the list's fault.
            let error = await #expect(throws: RangeListError.self) {
                try await origin.read("a.bin", ranges: ranges, version: nil, object: { _ in }, deliver: { _, _ in })
            }
            #expect(error?.description.contains(fault) == true && error?.description.contains("a.bin") == true)
        }
    }

    @Test("§10: a multi-range read asks for the missing ranges, touching ones joined, at most 64 a request")
    func batches() {
        let spread: [Range<Int64>] = (0..<100).map { (index: Int64) in (100 + index * 10)..<(105 + index * 10) }
        var missing = MissingRanges([0..<10, 10..<20, 30..<40] + spread)
        let first = missing.batch(most: RangeList.mostPerRequest)
        #expect(first.count == 64 && first.prefix(2) == [0..<20, 30..<40])
        #expect(RangeList.header(Array(first.prefix(2))) == "bytes=0-19,30-39")
        #expect(missing.batch(most: 1) == [0..<20])
        missing.clamp(to: 112)
        #expect(Array(missing.remaining) == [0..<10, 10..<20, 30..<40, 100..<105, 110..<112])
        #expect(missing.count == 37)
    }

    @Test("§10: only asked bytes are delivered, in order: a merged part gives its asked bytes, a part past a gap waits")
    func takesInOrder() {
        var missing = MissingRanges([10..<20, 30..<40, 50..<60])
        // A part that runs past its range delivers the asked bytes only; one past a gap gives nothing yet.
        #expect(
            missing.take(at: 0, count: 35).map { [$0.offset, Int64($0.skip), Int64($0.length)] } == [
                [10, 10, 10], [30, 30, 5],
            ])
        #expect(missing.take(at: 50, count: 10).isEmpty)
        #expect(missing.next == 35 && missing.count == 15)
        #expect(
            missing.take(at: 35, count: 25).map { [$0.offset, Int64($0.skip), Int64($0.length)] } == [
                [35, 0, 5], [50, 15, 10],
            ])
        #expect(missing.isEmpty && missing.count == 0)
    }

    /// Runs one answer against a read of `ranges` of `file`, its body sent in `pieces`.
    private func answer(
        status: Int, headers: [(String, String)], pieces: [ArraySlice<UInt8>], ranges: [Range<Int64>]
    ) async throws -> (Received, MissingRanges) {
        let dialect = HTTPDialect(base: "http://127.0.0.1:9/", headers: [])
        let reader = RangedReader(
            client: HTTPClients.client(for: OriginPolicy()), dialect: dialect, policy: OriginPolicy())
        let stream = AsyncStream<ByteBuffer> { continuation in
            for piece in pieces { continuation.yield(ByteBuffer(bytes: piece)) }
            continuation.finish()
        }
        let response = HTTPClientResponse(
            status: HTTPResponseStatus(statusCode: status), headers: HTTPHeaders(headers + [("ETag", "\"v1\"")]),
            body: .stream(stream))
        let received = Received()
        var missing = MissingRanges(ranges)
        var told: RemoteObject?
        try await ManyRangeAnswer(reader: reader, response: response, status: status, item: "d/f.bin", version: nil)
            .take(into: &missing, told: &told, object: received.object, deliver: received.deliver)
        return (received, missing)
    }

    @Test(
        "§10: a server that merges, reorders or drops parts gets asked bytes delivered in order, and the rest asked again"
    )
    func serversChoices() async throws {
        let asked: [Range<Int64>] = [5..<15, 20..<30, 1000..<1010, 1995..<2005]
        let type = [("Content-Type", Multipart.contentType)]
        // Merged: the first two in one part. Reordered: the last part first, so it waits for the next request.
        let merged = try await answer(
            status: 206, headers: type, pieces: [Multipart.body([0..<40, 1000..<1010], of: file)[...]], ranges: asked)
        #expect(merged.0.runs == Run.expected([5..<15, 20..<30, 1000..<1010], of: file) && merged.0.inOrder)
        #expect(Array(merged.1.remaining) == [1995..<2000], "clamped to the size; still missing")
        let reordered = try await answer(
            status: 206, headers: type, pieces: [Multipart.body([1000..<1010, 5..<15], of: file)[...]], ranges: asked)
        #expect(reordered.0.runs == Run.expected([5..<15], of: file))
        #expect(Array(reordered.1.remaining) == [20..<30, 1000..<1010, 1995..<2000])
        // One part (the first range honoured alone), then the whole item (200).
        let single = try await answer(
            status: 206, headers: [("Content-Range", "bytes 5-14/2000")], pieces: [file[5..<15]], ranges: asked)
        #expect(single.0.runs == Run.expected([5..<15], of: file) && single.0.told.map(\.size) == [2000])
        // A multipart body that ends inside a part is a short body, tried again.
        let cut = Multipart.body([0..<40, 1000..<1010], of: file).dropLast(30)
        await #expect(throws: RangedReader.Retry.self) {
            try await answer(status: 206, headers: type, pieces: [cut], ranges: asked)
        }
        let whole = try await answer(
            status: 200, headers: [("Content-Length", "2000")],
            pieces: Multipart.pieces(of: file, longest: 100, seed: 3),
            ranges: asked)
        #expect(whole.0.runs == Run.expected(asked, of: file) && whole.1.isEmpty && whole.0.inOrder)
        #expect(whole.0.told == [RemoteObject(size: 2000, version: "\"v1\"")])
    }

    @Test("§10: a malformed multipart answer is an invalid response naming the host and the item")
    func malformedAnswer() async throws {
        let body = Array("--b\r\nContent-Range: bytes 0-99/50\r\n\r\n".utf8)
        for type in ["multipart/byteranges; boundary=b", "multipart/byteranges"] {
            do {
                _ = try await answer(
                    status: 206, headers: [("Content-Type", type)], pieces: [body[...]], ranges: [0..<10])
                Issue.record("a malformed body was taken")
            } catch OriginFailure.invalidResponse(let detail) {
                #expect(
                    detail.contains("http://127.0.0.1:9") && detail.contains("d/f.bin") && detail.contains("multipart"))
            }
        }
    }
}

/// Multi-range reads against real servers on 127.0.0.1.
@Suite(.serialized) struct ManyRangeServerTests {
    /// `count` scattered ranges of 4…64 KiB over a file of `size` bytes (at least 80 KiB a range), sorted, with
    /// gaps between them.
    private static func scattered(_ count: Int, in size: Int, seed: UInt64) -> [Range<Int64>] {
        let draws = TestData.random(count: count * 2, seed: seed)
        let slot = Int64(size / count)
        return (0..<count).map { index in
            let length = Int64(4096 + Int(draws[2 * index]) * 240)  // 4 KiB … about 64 KiB
            let start = Int64(index) * slot + Int64(draws[2 * index + 1]) * (slot - length - 1) / 255
            return start..<(start + length)
        }
    }

    /// Reads `ranges` of `item` and checks the bytes against `file`.
    private static func readChecking(
        _ origin: any RemoteOrigin, _ item: String, ranges: [Range<Int64>], file: [UInt8], version: String? = nil
    ) async throws -> Received {
        let received = Received()
        try await origin.read(
            item, ranges: ranges, version: version, object: received.object, deliver: received.deliver)
        #expect(received.told.count == 1 && received.told.first?.size == Int64(file.count))
        #expect(received.inOrder)
        #expect(received.runs == Run.expected(ranges, of: file))
        return received
    }

    /// Runs `body` with nginx serving `db.bin`, a file of `size` random bytes drawn from `seed`, and an origin
    /// of it; `maxRanges` as ``NginxServer/start(root:tls:port:servingIndexFiles:maxRanges:)`` takes it.
    private static func withNginx(
        serving size: Int, seed: UInt64, maxRanges: Int? = nil,
        _ body: (_ server: NginxServer, _ origin: any RemoteOrigin, _ file: [UInt8], _ dir: String) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { dir in
            let file = TestData.random(count: size, seed: seed)
            try TestData.write(file, to: dir + "/db.bin")
            let server = try await NginxServer.start(root: URL(fileURLWithPath: dir), maxRanges: maxRanges)
            defer { Task { await server.stop() } }
            // A suite that blocks the cooperative threads for long (processes waited for) can hold the read's
            // task past the default 30 s of silence: these tests count bytes and GETs, not timeouts.
            var policy = OriginPolicy()
            policy.idleTimeout = .seconds(180)
            let endpoint = OriginEndpoint(location: .http(base: server.baseURL), policy: policy)
            try await body(server, endpoint.makeOrigin(), file, dir)
            await server.stop()
        }
    }

    @Test(
        "§10: a multi-range read delivers exactly the asked bytes, in order, from nginx's multipart answers, 64 ranges a GET",
        .requires(NginxServer.self))
    func nginxMultipart() async throws {
        try await Self.withNginx(serving: 16 << 20, seed: 2029) { server, origin, file, _ in
            #expect(origin.readsManyRanges)
            for (count, gets) in [(1, 1), (2, 1), (100, 2), (200, 4)] {
                try await server.clearAccessLog()
                let ranges = Self.scattered(count, in: file.count, seed: UInt64(count))
                _ = try await Self.readChecking(origin, "db.bin", ranges: ranges, file: file)
                let log = try await server.accessLog(atLeast: gets)
                #expect(
                    log.count == gets && log.allSatisfy { $0.method == "GET" && $0.status == 206 }, "\(count) ranges")
                #expect(log.map { $0.range?.split(separator: ",").count ?? 0 }.reduce(0, +) == count)
            }
            // The last range runs past the end: clamped, and nothing outside the file is asked for again.
            try await server.clearAccessLog()
            _ = try await Self.readChecking(
                origin, "db.bin", ranges: [0..<10, Int64(file.count - 5)..<Int64(file.count + 100)], file: file)
            #expect(try await server.accessLog(atLeast: 1).count == 1)
            #expect(origin.readsManyRanges)
        }
    }

    @Test(
        "§10: nginx with max_ranges 1 answers several ranges with the whole file: the asked bytes come from it, then one range a GET",
        .requires(NginxServer.self))
    func nginxWholeFile() async throws {
        try await Self.withNginx(serving: 4 << 20, seed: 7, maxRanges: 1) { server, origin, file, _ in
            let ranges = Self.scattered(20, in: file.count, seed: 1)
            _ = try await Self.readChecking(origin, "db.bin", ranges: ranges, file: file)
            let first = try await server.accessLog(atLeast: 1)
            #expect(first.map(\.status) == [200] && !origin.readsManyRanges)
            try await server.clearAccessLog()
            let again = Self.scattered(3, in: file.count, seed: 2)
            _ = try await Self.readChecking(origin, "db.bin", ranges: again, file: file)
            let log = try await server.accessLog(atLeast: 3)
            #expect(log.map(\.status) == [206, 206, 206] && log.compactMap(\.requestedBytes) == again)
        }
    }

    @Test(
        "§10: a multi-range read is pinned to its version: a file changed on nginx fails with versionChanged",
        .requires(NginxServer.self))
    func nginxVersionPin() async throws {
        try await Self.withNginx(serving: 1 << 20, seed: 11) { server, origin, file, dir in
            let ranges: [Range<Int64>] = [0..<4096, 65536..<69632]
            let version = try #require(
                try await Self.readChecking(origin, "db.bin", ranges: ranges, file: file).told.first?.version)
            _ = try await Self.readChecking(origin, "db.bin", ranges: ranges, file: file, version: version)
            try TestData.write(file + [1], to: dir + "/db.bin")
            await #expect(throws: OriginFailure.versionChanged(current: nil)) {
                try await origin.read(
                    "db.bin", ranges: ranges, version: version, object: { _ in }, deliver: { _, _ in })
            }
            #expect(try await server.accessLog().last?.ifMatch == version)
        }
    }

    @Test(
        "§10: a server that honours only the first range is asked again for the rest; a broken body resumes at the first missing byte",
        .requires(FaultOrigin.self))
    func firstRangeOnlyAndResume() async throws {
        try await withTemporaryDirectory { dir in
            let file = TestData.random(count: 256 << 10, seed: 5)
            try TestData.write(file, to: dir + "/f.bin")
            let server = try await FaultOrigin.start(root: URL(fileURLWithPath: dir))
            let ranges: [Range<Int64>] = [1000..<9000, 20000..<30000, 100_000..<100_100]
            var policy = OriginPolicy()
            policy.backoff = .milliseconds(10)
            let origin = OriginEndpoint(location: .http(base: server.baseURL(behaviour: "ok")), policy: policy)
                .makeOrigin()
            _ = try await Self.readChecking(origin, "f.bin", ranges: ranges, file: file)
            #expect(
                try await server.requests().map(\.range) == [
                    "bytes=1000-8999,20000-29999,100000-100099", "bytes=20000-29999,100000-100099",
                    "bytes=100000-100099",
                ])
            for behaviour in ["reset-1", "short-1"] {
                try await server.clear()
                let broken = OriginEndpoint(location: .http(base: server.baseURL(behaviour: behaviour)), policy: policy)
                    .makeOrigin()
                _ = try await Self.readChecking(broken, "f.bin", ranges: ranges, file: file)
                let asked = try await server.requests().compactMap(\.range)
                // The first GET sent half of 1000..<9000 and broke off: the next starts where the bytes stopped
                // (byte 5000, or before it where a reset lost bytes in flight).
                #expect(asked.count == 4 && asked[0] == "bytes=1000-8999,20000-29999,100000-100099", "\(behaviour)")
                let resumed = asked.count > 1 ? asked[1] : ""
                let start = Int(resumed.dropFirst("bytes=".count).prefix { $0 != "-" }) ?? 0
                #expect(resumed.hasSuffix("-8999,20000-29999,100000-100099"), "\(behaviour)")
                #expect(behaviour == "short-1" ? start == 5000 : (1000...5000).contains(start), "\(behaviour)")
            }
            // The version pin holds across the requests of one read: the item changes between them.
            try await server.clear()
            let changing = OriginEndpoint(location: .http(base: server.baseURL(behaviour: "changing")), policy: policy)
                .makeOrigin()
            await #expect(throws: OriginFailure.versionChanged(current: nil)) {
                try await changing.read("f.bin", ranges: ranges, version: nil, object: { _ in }, deliver: { _, _ in })
            }
            #expect(try await server.requests().map(\.status) == [206, 412])
            await server.stop()
        }
    }

    @Test(
        "§10 S3: an S3 origin reads many ranges one request each, exactly the asked bytes", .requires(MotoServer.self))
    func s3OneByOne() async throws {
        try await withTemporaryDirectory { dir in
            let server = try await MotoServer.start()
            try await server.createBucket("ranges", versioned: false)
            let file = TestData.random(count: 300 << 10, seed: 9)
            try TestData.write(file, to: dir + "/f")
            _ = try await server.putObject(bucket: "ranges", key: "f.bin", file: URL(fileURLWithPath: dir + "/f"))
            let origin = OriginEndpoint(
                location: .s3(endpoint: server.endpoint, region: server.region, bucket: "ranges", prefix: ""),
                credentials: AWSCredentials(accessKeyID: "testing", secretAccessKey: "testing")
            ).makeOrigin()
            #expect(!origin.readsManyRanges)
            _ = try await Self.readChecking(
                origin, "f.bin", ranges: [0..<100, 5000..<70000, Int64(file.count - 10)..<Int64(file.count + 10)],
                file: file)
            await server.stop()
        }
    }
}
