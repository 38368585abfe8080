import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization

/// Whether an origin answers a `Range` of several ranges with those ranges: true until it once sends the whole
/// item instead, after which each request asks for one range (a whole item per request is not paid twice).
final class ManyRangeSupport: Sendable {
    private let ignored = Atomic<Bool>(false)

    var holds: Bool { !ignored.load(ordering: .relaxed) }

    func markIgnored() { ignored.store(true, ordering: .relaxed) }
}

extension RangedReader {
    /// ``RemoteOrigin/read(_:ranges:version:object:deliver:)`` in requests of many ranges each, one after
    /// another, each spelled by `request` (the ranges, the version to pin on the wire): a `206` of
    /// `multipart/byteranges` or of one part, or a `200` of the whole item, gives whatever it holds of the
    /// missing bytes, and the rest is asked again.
    func read(
        _ item: String, ranges: [Range<Int64>], version: String?,
        request: (_ ranges: [Range<Int64>], _ version: String?) throws -> HTTPClientRequest,
        object: @Sendable (RemoteObject) async throws -> Void,
        deliver: @Sendable (Int64, RemoteBytes) async throws -> Void
    ) async throws {
        try RangeList.check(ranges, of: item)
        var missing = MissingRanges(ranges)
        var told: RemoteObject?
        var attempt = 0
        while !missing.isEmpty {
            attempt += 1
            do {
                let batch = missing.batch(most: manyRanges.holds ? RangeList.mostPerRequest : 1)
                let pin = (told?.version ?? version).flatMap { dialect.pins($0) ? $0 : nil }
                let response = try await execute(request(batch, pin), item)
                let status = try await Self.status(of: response, dialect: dialect, item: item)
                if status == 200 && batch.count > 1 { manyRanges.markIgnored() }
                let before = missing.count
                let answer = ManyRangeAnswer(
                    reader: self, response: response, status: status, item: item, version: version)
                try await answer.take(into: &missing, told: &told, object: object, deliver: deliver)
                guard missing.isEmpty || missing.count < before else {
                    throw OriginFailure.invalidResponse(
                        detail: "\(dialect.host) sent none of the bytes asked of \(item) (\(status) to \(batch.count) "
                            + "ranges from byte \(batch[0].lowerBound))")
                }
                // Another request for what the answer left out is a new request, with tries of its own.
                attempt = 0
            } catch {
                try await recover(from: error, attempt: attempt, item: item, at: missing.next ?? 0)
            }
        }
    }
}

/// One response to a multi-range request, read to its end: the bytes it holds that are missing are
/// delivered.
struct ManyRangeAnswer {
    let reader: RangedReader
    let response: HTTPClientResponse
    let status: Int
    let item: String
    let version: String?

    var host: String { reader.dialect.host }

    /// Delivers what the answer holds of `missing`, telling `object` what the item is first.
    func take(
        into missing: inout MissingRanges, told: inout RemoteObject?,
        object: @Sendable (RemoteObject) async throws -> Void,
        deliver: @Sendable (Int64, RemoteBytes) async throws -> Void
    ) async throws {
        let contentType = response.headers.first(name: "content-type")
        if status == 206 && MultipartByteranges.isMultipart(contentType) {
            try await takeParts(contentType ?? "", into: &missing, told: &told, object: object, deliver: deliver)
            return
        }
        let (sent, size) = try RangedReader.extent(of: response, status: status, item: item, host: host)
        try await settle(size: size, missing: &missing, told: &told, object: object)
        // A 416 sends no bytes: what it leaves missing lies within the size, and the caller refuses an answer
        // that made no progress.
        guard let sent, !missing.isEmpty else { return }
        var position = sent.lowerBound
        var body = response.body.makeAsyncIterator()
        while let buffer = try await RangedReader.next(&body) {
            try await pass(buffer, at: position, missing: &missing, to: deliver)
            position += Int64(buffer.readableBytes)
            // A whole item is left unread past the last byte wanted; anything shorter is read to its end, so the
            // connection stays open.
            if status == 200 && missing.isEmpty { return }
        }
    }

    /// Reads a `multipart/byteranges` body: each part's bytes at the offset its `Content-Range` names.
    private func takeParts(
        _ contentType: String, into missing: inout MissingRanges, told: inout RemoteObject?,
        object: @Sendable (RemoteObject) async throws -> Void,
        deliver: @Sendable (Int64, RemoteBytes) async throws -> Void
    ) async throws {
        var parts: MultipartByteranges
        do { parts = try MultipartByteranges(contentType: contentType) } catch { throw malformed(error) }
        var position: Int64 = 0
        var body = response.body.makeAsyncIterator()
        while let buffer = try await RangedReader.next(&body) {
            let events: [MultipartByteranges.Event]
            do { events = try parts.feed(buffer) } catch { throw malformed(error) }
            for event in events {
                switch event {
                case .part(let range):
                    try await settle(size: range.size, missing: &missing, told: &told, object: object)
                    position = range.range?.lowerBound ?? 0
                case .bytes(let bytes):
                    try await pass(bytes, at: position, missing: &missing, to: deliver)
                    position += Int64(bytes.readableBytes)
                }
            }
        }
        guard parts.isComplete else {
            throw RangedReader.Retry(detail: "\(host) ended its multipart answer for \(item) before its last part")
        }
    }

    /// Checks the item's size and version as a response tells them (the first time, tells `object`), and
    /// drops the missing bytes past its end.
    private func settle(
        size: Int64, missing: inout MissingRanges, told: inout RemoteObject?,
        object: @Sendable (RemoteObject) async throws -> Void
    ) async throws {
        try await reader.settle(
            response, status: status, size: size, item: item, version: version, told: &told, object: object)
        missing.clamp(to: size)
    }

    /// Delivers the bytes of `buffer`, at item offset `offset`, that are missing and may go now.
    private func pass(
        _ buffer: ByteBuffer, at offset: Int64, missing: inout MissingRanges,
        to deliver: @Sendable (Int64, RemoteBytes) async throws -> Void
    ) async throws {
        for piece in missing.take(at: offset, count: buffer.readableBytes) {
            let slice = buffer.getSlice(at: buffer.readerIndex + piece.skip, length: piece.length)!
            do {
                try await deliver(piece.offset, RemoteBytes(slice))
            } catch {
                throw RangedReader.CallerError(error: error)
            }
        }
    }

    /// The failure a malformed multipart body means.
    private func malformed(_ error: any Error) -> OriginFailure {
        let detail = (error as? MultipartByteranges.Malformed)?.detail ?? "\(error)"
        return .invalidResponse(detail: "\(host) sent a malformed multipart answer for \(item): \(detail)")
    }
}
