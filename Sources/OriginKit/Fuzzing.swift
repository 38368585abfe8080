import Foundation
import NIOCore
import NIOHTTP1

/// The decoders of what an origin sends, as fuzz targets (`scripts/fuzz.sh`, `Fuzz/README.md`): each takes
/// arbitrary bytes, decodes them as the origin's answer would be decoded, and returns what is wrong with the
/// result (an invariant the decoder must keep), or nil. A crash or hang is the fuzzer's to catch.
package enum OriginFuzzing {
    /// `Content-Range`: what parses names bytes inside the size, and prints back to itself.
    package static func contentRange(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let parsed = ContentRange(String(decoding: bytes, as: UTF8.self)) else { return nil }
        guard parsed.size >= 0 else { return "a negative size \(parsed.size)" }
        if let range = parsed.range {
            guard range.lowerBound >= 0, range.upperBound <= parsed.size, !range.isEmpty else {
                return "range \(range) outside size \(parsed.size)"
            }
        }
        let printed =
            "bytes " + (parsed.range.map { "\($0.lowerBound)-\($0.upperBound - 1)" } ?? "*") + "/\(parsed.size)"
        return ContentRange(printed) == parsed ? nil : "\(printed) does not parse back to itself"
    }

    /// `Retry-After`: a wait that parses is never negative, and the wait taken is capped.
    package static func retryAfter(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let wait = Backoff.retryAfter(String(decoding: bytes, as: UTF8.self)) else { return nil }
        guard wait >= .zero else { return "a negative Retry-After \(wait)" }
        let cap = Duration.seconds(30)
        let delay = Backoff.delay(attempt: 1, base: .milliseconds(100), retryAfter: wait, cap: cap)
        return delay <= cap && delay >= .zero ? nil : "a delay \(delay) past its cap"
    }

    /// A response's headers (`Name: value` lines), as both dialects read them: the version is never empty,
    /// a version that can be pinned starts with a quote (HTTP) and `Content-Range` keeps its invariants.
    package static func responseHeaders(_ bytes: UnsafeRawBufferPointer) -> String? {
        var headers = HTTPHeaders()
        for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
            // NIO's parser refuses a name that is not ASCII before any dialect sees it (and `add` traps on one).
            guard let colon = line.firstIndex(of: ":"), line[..<colon].allSatisfy(\.isASCII) else { continue }
            headers.add(
                name: String(line[..<colon]),
                value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let http = HTTPDialect(base: "http://127.0.0.1/", headers: [])
        let s3 = S3Dialect(endpoint: "http://127.0.0.1", bucket: "b", prefix: "", headers: [], signer: nil)
        for dialect in [http as any OriginDialect, s3] {
            let version = dialect.version(of: headers, size: 1)
            guard !version.isEmpty else { return "an empty version from \(headers)" }
            if dialect is HTTPDialect, dialect.pins(version), !version.hasPrefix("\"") {
                return "HTTP pins \(version), not a strong ETag"
            }
            _ = dialect.namesVersion(headers)
        }
        for value in headers["content-range"] {
            if let problem = Array(value.utf8).withUnsafeBytes({ contentRange($0) }) { return problem }
        }
        for value in headers["retry-after"] {
            if let problem = Array(value.utf8).withUnsafeBytes({ retryAfter($0) }) { return problem }
        }
        return nil
    }

    /// nginx's JSON autoindex: every entry stays inside its folder and has a size that is a byte count.
    package static func nginxListing(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let (files, folders) = NginxListing.entries(json: Array(bytes), folder: "d/") else { return nil }
        for file in files {
            let name = file.item.dropFirst(2)
            guard file.item.hasPrefix("d/"), !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                return "file \(file.item) leaves its folder"
            }
            guard file.size >= 0 else { return "file \(file.item) has size \(file.size)" }
        }
        for folder in folders {
            let name = folder.dropFirst(2).dropLast()
            guard folder.hasPrefix("d/"), folder.hasSuffix("/"), !name.isEmpty, !name.contains("/"), name != ".",
                name != ".."
            else { return "folder \(folder) leaves its folder" }
        }
        return nil
    }

    /// S3's `ListObjectsV2` and error XML: keys are never empty, sizes are byte counts, and a truncated page
    /// names where to go on or is the last.
    package static func s3Listing(_ bytes: UnsafeRawBufferPointer) -> String? {
        let xml = String(decoding: bytes, as: UTF8.self)
        let listing = S3Listing(xml: xml)
        for entry in listing.entries {
            guard !entry.key.isEmpty, entry.size >= 0 else { return "entry \(entry.key) of size \(entry.size)" }
        }
        _ = S3Listing.errorCode(in: xml)
        return nil
    }

    /// A `multipart/byteranges` answer: the first line is its `Content-Type`, the next byte draws the sizes of
    /// the pieces the rest (the body) is fed in, as a network would split it. Every part names a range inside
    /// the one size all parts give, gets exactly its range's length of bytes before the next part or the
    /// close delimiter (the bytes the body holds just before a delimiter), and bytes only come inside a part;
    /// the body fed whole and in pieces gives the same parts, bytes and end (or the same fault); the reader is
    /// complete only after a close delimiter, and ignores what follows it.
    package static func multipartByteranges(_ bytes: UnsafeRawBufferPointer) -> String? {
        let input = Array(bytes)
        let newline = input.firstIndex(of: 0x0A) ?? input.count
        var contentType = String(decoding: input[..<newline], as: UTF8.self)
        if contentType.hasSuffix("\r") { contentType.removeLast() }
        _ = MultipartByteranges.isMultipart(contentType)
        guard let boundary = MultipartByteranges.boundary(in: contentType) else { return nil }
        guard (1...70).contains(boundary.utf8.count) else { return "a boundary of \(boundary.utf8.count) bytes" }
        guard newline + 1 < input.count else { return nil }
        let body = input[(newline + 2)...]
        let whole = MultipartRead(contentType: contentType, pieces: [body])
        let split = MultipartRead(
            contentType: contentType, pieces: MultipartRead.pieces(of: body, longest: Int(input[newline + 1]) + 1))
        if let problem = whole.problem ?? split.problem { return problem }
        guard whole == split else { return "fed whole, the body reads as \(whole); in pieces, as \(split)" }
        // A part that was followed by a delimiter got the body's bytes just before one.
        let delimited = Array("\r\n".utf8) + body
        let delimiter = Array("\r\n--\(boundary)".utf8)
        for part in split.parts.dropLast(split.complete ? 0 : 1)
        where delimited.firstRange(of: part.bytes + delimiter) == nil {
            return "a part of \(part.range) got \(part.bytes.count) bytes the body does not hold before a delimiter"
        }
        guard whole.complete, let parser = whole.parser else { return nil }
        guard delimited.firstRange(of: delimiter + Array("--".utf8)) != nil else {
            return "complete without a close delimiter"
        }
        var after = parser
        guard (try? after.feed(ByteBuffer(string: "\r\n--x\r\nContent-Range: bytes 0-0/1\r\n\r\n")))?.isEmpty == true
        else { return "an epilogue read as parts" }
        return nil
    }
}

/// What a `multipart/byteranges` reader gave for a body: its parts with their bytes, whether it ended, or
/// the fault it found; and the first broken invariant of what it gave.
private struct MultipartRead: Equatable, CustomStringConvertible {
    var parts: [(range: ContentRange, bytes: [UInt8])] = []
    var complete = false
    var fault: String?
    /// An invariant the events broke.
    var problem: String?
    /// The reader after the whole body, when it was not refused.
    var parser: MultipartByteranges?

    init(contentType: String, pieces: [ArraySlice<UInt8>]) {
        guard var parser = try? MultipartByteranges(contentType: contentType) else { return }
        do {
            for piece in pieces {
                for event in try parser.feed(ByteBuffer(bytes: piece)) { take(event) }
                if problem != nil { return }
            }
            complete = parser.isComplete
            if complete, let last = parts.last, last.bytes.count != last.range.range?.count {
                problem = "complete with a part short of its range: \(last.bytes.count) bytes of \(last.range)"
            }
            self.parser = parser
        } catch {
            fault = (error as? MultipartByteranges.Malformed)?.detail ?? "\(error)"
        }
    }

    /// Checks an event against the parts before it and adds it to them.
    private mutating func take(_ event: MultipartByteranges.Event) {
        switch event {
        case .part(let range):
            guard let bytes = range.range, bytes.lowerBound >= 0, bytes.upperBound <= range.size, !bytes.isEmpty
            else {
                problem = "a part names \(range), not a range inside its size"
                return
            }
            if let first = parts.first, first.range.size != range.size {
                problem = "parts give the size as both \(first.range.size) and \(range.size)"
                return
            }
            if let last = parts.last, last.bytes.count != last.range.range?.count {
                problem = "a part begins after \(last.bytes.count) bytes of \(last.range)"
                return
            }
            parts.append((range, []))
        case .bytes(let buffer):
            guard let last = parts.last else {
                problem = "bytes before any part"
                return
            }
            parts[parts.count - 1].bytes += buffer.readableBytesView
            guard parts[parts.count - 1].bytes.count <= last.range.range?.count ?? 0 else {
                problem = "a part of \(last.range) got \(parts[parts.count - 1].bytes.count) bytes"
                return
            }
        }
    }

    /// `body` cut into pieces of 1…`longest` bytes, their lengths drawn from a generator seeded by `longest`.
    static func pieces(of body: ArraySlice<UInt8>, longest: Int) -> [ArraySlice<UInt8>] {
        var state = UInt64(longest) &* 0x9E37_79B9_7F4A_7C15 | 1
        var pieces: [ArraySlice<UInt8>] = []
        var start = body.startIndex
        while start < body.endIndex {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            let end = min(body.endIndex, start + 1 + Int(state % UInt64(longest)))
            pieces.append(body[start..<end])
            start = end
        }
        return pieces
    }

    /// The same parts and end, or the same fault: a refused feed returns none of the events of its buffer, so
    /// what came before a fault depends on where the body was cut.
    static func == (lhs: Self, rhs: Self) -> Bool {
        guard lhs.fault == nil, rhs.fault == nil else { return lhs.fault == rhs.fault }
        return lhs.complete == rhs.complete && lhs.parts.count == rhs.parts.count
            && zip(lhs.parts, rhs.parts).allSatisfy { $0.range == $1.range && $0.bytes == $1.bytes }
    }

    var description: String {
        let read = parts.map { "\($0.range) with \($0.bytes.count) bytes" }.joined(separator: ", ")
        return "[\(read)]" + (fault.map { ", refused: \($0)" } ?? (complete ? ", complete" : ", unfinished"))
    }
}
