import Foundation
import NIOCore

/// A streaming reader of a `multipart/byteranges` body (RFC 9110 §14.6, RFC 2046 §5.1), the answer to a
/// `Range` of several ranges: fed the body's buffers as they come, split at any byte, it gives each part's
/// `Content-Range` and then that part's bytes, holding no more than one part's headers.
///
/// A part's bytes are counted by its `Content-Range` rather than searched for the boundary, so they are never
/// copied; the delimiter must follow them exactly.
struct MultipartByteranges {
    /// What the body holds next.
    enum Event {
        /// A part begins: the bytes that follow are `range.range` of an item of `range.size` bytes.
        case part(ContentRange)
        /// Bytes of the current part, in order.
        case bytes(ByteBuffer)
    }

    /// What is wrong with a body or its `Content-Type`.
    struct Malformed: Error {
        let detail: String
    }

    private enum State: Equatable {
        /// Before the first delimiter (a preamble is allowed).
        case preamble
        /// After a delimiter: the rest of its line and the part's headers, or `--` after the last one.
        case head
        /// Inside a part, with this many bytes still to come.
        case bytes(remaining: Int64)
        /// After a part's bytes, having matched this much of the delimiter that must follow.
        case delimiter(matched: Int)
        /// After the close delimiter: anything more is an epilogue, ignored.
        case epilogue
    }

    /// `CRLF--boundary`.
    private let delimiter: [UInt8]
    private var state = State.preamble
    /// The bytes of the preamble or head seen so far. The preamble starts with a CRLF, as if the body did, so
    /// a delimiter at the very start matches like any other.
    private var pending: [UInt8] = [0x0D, 0x0A]
    /// The item's size, as the first part told it.
    private var size: Int64?

    /// The longest preamble or part head accepted, its terminator included.
    static let longestHead = 16 << 10
    private static let endless = Malformed(
        detail: "no delimiter or end of a part's headers within \(longestHead) bytes")

    /// A reader for a body of `contentType`; throws when it is `multipart/byteranges` without a usable
    /// boundary.
    init(contentType: String) throws {
        guard let boundary = Self.boundary(in: contentType) else {
            throw Malformed(detail: "its Content-Type \"\(contentType)\" names no boundary")
        }
        delimiter = Array("\r\n--\(boundary)".utf8)
    }

    /// Whether a response of `contentType` is a multipart answer.
    static func isMultipart(_ contentType: String?) -> Bool {
        contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
            .lowercased() == "multipart/byteranges"
    }

    /// The `boundary` parameter (quoted or not) of a Content-Type; nil without one, or with one RFC 2046
    /// forbids (empty, longer than 70 characters).
    static func boundary(in contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == "boundary" else { continue }
            var value = pair[1]
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            return (1...70).contains(value.utf8.count) ? value : nil
        }
        return nil
    }

    /// Whether the close delimiter has come: a body that ends before it was cut short.
    var isComplete: Bool { state == .epilogue }

    /// Reads the next bytes of the body.
    mutating func feed(_ buffer: ByteBuffer) throws -> [Event] {
        var rest = buffer
        var events: [Event] = []
        while rest.readableBytes > 0 {
            switch state {
            case .preamble:
                guard try accumulate(&rest, upTo: delimiter) != nil else { continue }
                pending = []
                state = .head
            case .head:
                if let event = try readHead(&rest) { events.append(event) }
            case .bytes(let remaining):
                let length = Int(min(remaining, Int64(rest.readableBytes)))
                events.append(.bytes(rest.readSlice(length: length)!))
                state =
                    remaining == Int64(length) ? .delimiter(matched: 0) : .bytes(remaining: remaining - Int64(length))
            case .delimiter(let matched):
                let byte = rest.readInteger(as: UInt8.self)!
                guard byte == delimiter[matched] else {
                    throw Malformed(detail: "a part runs on past the bytes its Content-Range names")
                }
                state = matched + 1 == delimiter.count ? .head : .delimiter(matched: matched + 1)
            case .epilogue:
                rest.moveReaderIndex(to: rest.writerIndex)
            }
        }
        return events
    }

    /// Reads what follows a delimiter: `--` (the last), or the rest of its line and the part's headers. The
    /// part's `Content-Range` once they are all in; nil while more is needed or after the last.
    private mutating func readHead(_ rest: inout ByteBuffer) throws -> Event? {
        guard let end = try accumulate(&rest, upTo: Self.headEnd, closing: true) else { return nil }
        let head = pending[..<end]
        defer { pending = [] }
        // Read as bytes: a head comes per part, thousands to an answer of scattered pages.
        var lines = Self.lines(of: head)
        // The rest of the delimiter's line may hold only blanks (RFC 2046's transport padding).
        guard lines.removeFirst().allSatisfy({ $0 == 0x20 || $0 == 0x09 }) else {
            throw Malformed(detail: "a delimiter is followed by more than blanks on its line")
        }
        let values = lines.compactMap { line -> String? in
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
                Self.isContentRange(name: line[..<colon])
            else { return nil }
            return String(decoding: line[(colon + 1)...], as: UTF8.self)
        }
        guard let value = values.first else { throw Malformed(detail: "a part has no Content-Range") }
        guard values.count == 1, let parsed = ContentRange(value), let range = parsed.range else {
            throw Malformed(detail: "a part's Content-Range \"\(value)\" is not bytes FIRST-LAST/SIZE within the size")
        }
        guard size == nil || size == parsed.size else {
            throw Malformed(detail: "its parts give the size as both \(size!) and \(parsed.size)")
        }
        size = parsed.size
        state = .bytes(remaining: Int64(range.count))
        return .part(parsed)
    }

    /// The end of a part's headers.
    private static let headEnd = Array("\r\n\r\n".utf8)
    private static let contentRange = Array("content-range".utf8)

    /// The CRLF-ended lines of `head`, without their CRLF.
    private static func lines(of head: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = head.startIndex
        var index = head.startIndex
        while index + 1 < head.endIndex {
            if head[index] == 0x0D && head[index + 1] == 0x0A {
                lines.append(head[start..<index])
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        if start < head.endIndex { lines.append(head[start...]) }
        return lines
    }

    /// Whether a header's name, blanks around it aside, is `Content-Range` in any case.
    private static func isContentRange(name: ArraySlice<UInt8>) -> Bool {
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let first = name.firstIndex(where: { !isBlank($0) }), let last = name.lastIndex(where: { !isBlank($0) })
        else { return false }
        let trimmed = name[first...last]
        // Capitals lowered; nothing else changes.
        return trimmed.count == contentRange.count
            && zip(trimmed, contentRange).allSatisfy { byte, expected in
                (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == expected
            }
    }

    /// Moves bytes of `rest` into `pending` until it holds `terminator`, and returns where in `pending` the
    /// terminator ends, leaving in `rest` the bytes after it; nil when all of `rest` went in without it. With
    /// `closing`, a `pending` that starts with `--` is the close delimiter's end instead.
    private mutating func accumulate(_ rest: inout ByteBuffer, upTo terminator: [UInt8], closing: Bool = false)
        throws -> Int?
    {
        while rest.readableBytes > 0 {
            // A little at a time: a head is short, and the bytes after it are a part's, never to be copied.
            let before = pending.count
            let step = min(rest.readableBytes, 256)
            pending += rest.readableBytesView.prefix(step)
            if closing, pending.count >= 2, pending[0] == 0x2D, pending[1] == 0x2D {
                rest.moveReaderIndex(forwardBy: 2 - before)
                pending = []
                state = .epilogue
                return nil
            }
            // The terminator cannot end within the bytes searched before.
            let from = max(0, before - terminator.count + 1)
            // The limit is where the terminator ends, whatever the pieces: a head ending within it is taken
            // however the body was cut, one ending past it refused.
            if let found = pending[from...].firstRange(of: terminator) {
                guard found.upperBound <= Self.longestHead else { throw Self.endless }
                rest.moveReaderIndex(forwardBy: found.upperBound - before)
                pending.removeSubrange(found.upperBound...)
                return found.upperBound
            }
            rest.moveReaderIndex(forwardBy: step)
            guard pending.count < Self.longestHead else { throw Self.endless }
        }
        return nil
    }
}
