import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Reads a range of an item in one request, retried as ``OriginPolicy`` allows from the first byte not yet
/// delivered and pinned to the version the first response told (CONTRACT §10): the engine of both origins.
struct RangedReader: Sendable {
    let client: HTTPClient
    let dialect: any OriginDialect
    let policy: OriginPolicy

    /// A failure worth another try, and what to say if none is left.
    struct Retry: Error {
        let detail: String
        var retryAfter: Duration?
    }

    /// An error thrown by the caller's `object` or `deliver`: passed through untouched.
    struct CallerError: Error {
        let error: any Error
    }

    /// Whether a multi-range request of this origin was ever answered with the whole item.
    let manyRanges = ManyRangeSupport()

    func read(
        _ item: String, range: Range<Int64>, version: String?,
        object: @Sendable (RemoteObject) async throws -> Void,
        deliver: @Sendable (Int64, RemoteBytes) async throws -> Void
    ) async throws {
        var next = range.lowerBound
        var end = range.upperBound
        var told: RemoteObject?
        var attempt = 0
        while true {
            attempt += 1
            do {
                let pin = told?.version ?? version
                let response = try await execute(
                    dialect.request(item, range: next..<end, version: pin.flatMap { dialect.pins($0) ? $0 : nil }), item
                )
                let status = try await Self.status(of: response, dialect: dialect, item: item)
                let (sent, size) = try Self.extent(of: response, status: status, item: item, host: dialect.host)
                try await settle(
                    response, status: status, size: size, item: item, version: version, told: &told, object: object)
                end = min(end, size)
                guard next < end, let sent else { return }
                guard status == 200 || sent.lowerBound == next else {
                    throw OriginFailure.invalidResponse(
                        detail: "\(dialect.host) sent bytes \(sent) of \(item), not from \(next)")
                }
                var position = sent.lowerBound
                var body = response.body.makeAsyncIterator()
                while let buffer = try await Self.next(&body) {
                    var buffer = buffer
                    let skip = Int(max(0, min(Int64(buffer.readableBytes), next - position)))
                    position += Int64(buffer.readableBytes)
                    buffer.moveReaderIndex(forwardBy: skip)
                    let wanted = Int(min(Int64(buffer.readableBytes), end - next))
                    if wanted > 0 {
                        let slice = buffer.getSlice(at: buffer.readerIndex, length: wanted)!
                        do { try await deliver(next, RemoteBytes(slice)) } catch { throw CallerError(error: error) }
                        next += Int64(wanted)
                    }
                    if next >= end { break }
                }
                guard next >= end else {
                    throw Retry(detail: "\(dialect.host) ended the body of \(item) at byte \(next) of \(end)")
                }
                return
            } catch {
                try await recover(from: error, attempt: attempt, item: item, at: next)
            }
        }
    }

    /// A response's status when it brings bytes or the size (200, 206, 416); otherwise the failure it means,
    /// or a ``Retry`` for a status worth another try.
    static func status(of response: HTTPClientResponse, dialect: any OriginDialect, item: String) async throws -> Int {
        let status = Int(response.status.code)
        guard status == 200 || status == 206 || status == 416 else {
            let body = try await prefix(of: response.body)
            if let failure = dialect.failure(status: status, body: body, item: item) { throw failure }
            throw Retry(
                detail: "\(dialect.host) answered \(status) for \(item)",
                retryAfter: Backoff.retryAfter(response.headers.first(name: "retry-after")))
        }
        return status
    }

    /// Checks what a response says the item is against the version asked for and what an earlier response
    /// told, and tells `object` the first time: the version pin holds across a read's requests.
    func settle(
        _ response: HTTPClientResponse, status: Int, size: Int64, item: String, version: String?,
        told: inout RemoteObject?, object: @Sendable (RemoteObject) async throws -> Void
    ) async throws {
        var current = RemoteObject(size: size, version: dialect.version(of: response.headers, size: size))
        if status == 416 && !dialect.namesVersion(response.headers) {
            // nginx sends no ETag with a 416: a range past the end costs a HEAD to learn the version.
            current = try await head(item, version: told?.version ?? version)
        }
        if let expected = told?.version ?? version, current.version != expected {
            throw OriginFailure.versionChanged(current: current)
        }
        if told == nil {
            told = current
            do { try await object(current) } catch { throw CallerError(error: error) }
        } else if current.size != told?.size {
            throw OriginFailure.invalidResponse(
                detail: "\(dialect.host) changed the size of \(item) within one version")
        }
    }

    /// Throws what a failed exchange means, after the wait before another try when it is worth one and tries
    /// are left (`attempt` was the last): an ``OriginFailure`` or the caller's own error as it is; a 5xx, a
    /// 429 or a broken body or connection after a backoff. `next` is the first byte not yet delivered.
    func recover(from error: any Error, attempt: Int, item: String, at next: Int64) async throws {
        switch error {
        case let caller as CallerError:
            throw caller.error
        case let failure as OriginFailure:
            throw failure
        case let retry as Retry:
            try await wait(before: attempt + 1, retry)
        case let broken as BrokenBody:
            if Task.isCancelled { throw CancellationError() }
            // A body that breaks off is retried from the first byte not delivered; one that goes silent
            // means the origin is gone.
            if let timeout = broken.error as? HTTPClientError, timeout == .readTimeout {
                throw OriginFailure.unreachable(detail: "\(dialect.host) sent nothing for \(policy.idleTimeout)")
            }
            try await wait(
                before: attempt + 1,
                Retry(detail: "\(dialect.host) broke off \(item) at byte \(next): \(broken.error)"))
        default:
            if Task.isCancelled { throw CancellationError() }
            let failure = classify(error, item: item)
            guard case .transient(let detail) = failure else { throw failure }
            try await wait(before: attempt + 1, Retry(detail: detail))
        }
    }

    /// An error while a response's body streamed.
    struct BrokenBody: Error {
        let error: any Error
    }

    /// The body's next bytes, its errors marked as breaking the body.
    static func next(_ body: inout HTTPClientResponse.Body.AsyncIterator) async throws -> ByteBuffer? {
        do { return try await body.next() } catch { throw BrokenBody(error: error) }
    }

    /// ``RemoteOrigin/warmUp(probing:)``: one request, its answer read to the end; no retries. A ranged GET
    /// of one byte of `item`, whose answer says its length, so the connection goes back to the pool; without
    /// an item a `HEAD` of the base, which warms the client's code but whose connection may close (nginx's
    /// answer to a `HEAD` of a listing says no length).
    func warmUp(probing item: String?) async {
        guard let request = try? dialect.request(item ?? "", range: item == nil ? nil : 0..<1, version: nil),
            let response = try? await execute(request, item ?? "")
        else { return }
        _ = try? await Self.prefix(of: response.body)
    }

    /// `HEAD` of the item.
    func head(_ item: String, version: String?) async throws -> RemoteObject {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let response = try await execute(
                    dialect.request(item, range: nil, version: version.flatMap { dialect.pins($0) ? $0 : nil }), item)
                let status = Int(response.status.code)
                guard status == 200 else {
                    if let failure = dialect.failure(status: status, body: "", item: item) { throw failure }
                    throw Retry(
                        detail: "\(dialect.host) answered \(status) for \(item)",
                        retryAfter: Backoff.retryAfter(response.headers.first(name: "retry-after")))
                }
                guard let length = response.headers.first(name: "content-length").flatMap({ Int64($0) }) else {
                    throw OriginFailure.invalidResponse(detail: "\(dialect.host) gave no Content-Length for \(item)")
                }
                let object = RemoteObject(size: length, version: dialect.version(of: response.headers, size: length))
                if let version, object.version != version { throw OriginFailure.versionChanged(current: object) }
                return object
            } catch {
                try await recover(from: error, attempt: attempt, item: item, at: 0)
            }
        }
    }

    /// Runs a request; a response is returned with its body still to stream.
    func execute(_ request: HTTPClientRequest, _ item: String) async throws -> HTTPClientResponse {
        // No deadline on the whole exchange: a long body is fine while bytes flow; the idle timeout (the
        // client's read timeout) ends a silent one.
        try await client.execute(request, timeout: .hours(24))
    }

    /// ``execute(_:_:)`` for a listing, with the retries of a read: a 5xx, a 429 (after its `Retry-After`)
    /// or a broken connection is tried again with backoff; a transport error becomes the ``OriginFailure``
    /// it means.
    func executeListing(_ request: () throws -> HTTPClientRequest, _ item: String) async throws -> HTTPClientResponse {
        var attempt = 0
        while true {
            attempt += 1
            let response: HTTPClientResponse
            do {
                response = try await execute(try request(), item)
            } catch let failure as OriginFailure {
                throw failure
            } catch {
                let failure = classify(error, item: item)
                guard case .transient(let detail) = failure else { throw failure }
                try await wait(before: attempt + 1, Retry(detail: detail))
                continue
            }
            let status = Int(response.status.code)
            guard status >= 500 || status == 429 else { return response }
            _ = try? await Self.prefix(of: response.body)  // drained, so the connection can be reused
            try await wait(
                before: attempt + 1,
                Retry(
                    detail: "\(dialect.host) answered \(status) for \(item)",
                    retryAfter: Backoff.retryAfter(response.headers.first(name: "retry-after"))))
        }
    }

    /// Sleeps before try `attempt`, or throws `transient` when none is left.
    private func wait(before attempt: Int, _ retry: Retry) async throws {
        guard attempt <= policy.attempts else { throw OriginFailure.transient(detail: retry.detail) }
        try await Task.sleep(
            for: Backoff.delay(
                attempt: attempt - 1, base: policy.backoff, retryAfter: retry.retryAfter, cap: policy.maxRetryAfter))
    }

    /// What a transport error means: retried (`transient`) when the connection broke after it was made,
    /// `unreachable` when the origin could not be reached or went silent.
    func classify(_ error: any Error, item: String) -> OriginFailure {
        let host = dialect.host
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return .unreachable(detail: "connecting to \(host) timed out")
            case .readTimeout: return .unreachable(detail: "\(host) sent nothing for \(policy.idleTimeout)")
            case .remoteConnectionClosed:
                return .transient(detail: "\(host) closed the connection while sending \(item)")
            default: return .unreachable(detail: "\(host): \(error)")
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return .unreachable(detail: "connecting to \(host) timed out")
            // A pooled connection the server closed as the request went out: another connection will do.
            default: return .transient(detail: "\(host) closed the connection (\(error)) while sending \(item)")
            }
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNRESET, EPIPE: return .transient(detail: "\(host) reset the connection while sending \(item)")
            default: return .unreachable(detail: "\(host): \(error.description)")
            }
        }
        return .unreachable(detail: "\(host): \(error)")
    }

    /// The bytes a response sends and the item's size: from `Content-Range` on a 206 or 416, from
    /// `Content-Length` on a 200 (a server that ignored `Range` sends the whole item).
    static func extent(of response: HTTPClientResponse, status: Int, item: String, host: String) throws -> (
        Range<Int64>?, Int64
    ) {
        switch status {
        case 206, 416:
            guard let header = response.headers.first(name: "content-range"), let parsed = ContentRange(header),
                (status == 416) == (parsed.range == nil)
            else {
                throw OriginFailure.invalidResponse(detail: "\(host) sent no usable Content-Range for \(item)")
            }
            return (parsed.range, parsed.size)
        default:
            guard let length = response.headers.first(name: "content-length").flatMap({ Int64($0) }), length >= 0 else {
                throw OriginFailure.invalidResponse(detail: "\(host) sent \(item) whole without a Content-Length")
            }
            return (0..<length, length)
        }
    }

    /// The first `limit` bytes of a response's body: an error's code, a listing.
    static func prefix(of body: HTTPClientResponse.Body, limit: Int = 4096) async throws -> String {
        var bytes: [UInt8] = []
        for try await buffer in body {
            bytes += buffer.readableBytesView.prefix(limit - bytes.count)
            if bytes.count >= limit { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
