import Foundation
import SigV4
import Synchronization
import TestSupport
import Testing

@testable import OriginKit

/// The pure parts of the origins: header parsing, backoff, S3's XML, credentials (CONTRACT §10).
@Suite struct OriginParsingTests {
    @Test("§10: Content-Range gives the bytes sent and the size; */SIZE on a 416; anything else is refused")
    func contentRange() {
        #expect(
            ContentRange("bytes 0-65535/1048576")?.range == 0..<65_536
                && ContentRange("bytes 0-65535/1048576")?.size == 1_048_576)
        #expect(ContentRange("bytes */4096")?.range == nil && ContentRange("bytes */4096")?.size == 4096)
        for bad in ["bytes 10-5/100", "bytes 0-100/100", "items 0-1/2", "bytes 0-1/*", "bytes -1-2/5", "bytes 1-2", ""]
        {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
    }

    @Test("§10: retries back off exponentially with jitter, honour Retry-After, and are capped")
    func backoff() {
        for attempt in 1...4 {
            let delay = Backoff.delay(attempt: attempt, base: .milliseconds(200), retryAfter: nil, cap: .seconds(10))
            let nominal = Duration.milliseconds(200) * (1 << (attempt - 1))
            #expect(delay >= nominal * 0.75 && delay <= nominal * 1.25)
        }
        #expect(
            Backoff.delay(attempt: 1, base: .milliseconds(200), retryAfter: .seconds(3), cap: .seconds(10))
                == .seconds(3))
        #expect(
            Backoff.delay(attempt: 1, base: .milliseconds(200), retryAfter: .seconds(300), cap: .seconds(10))
                == .seconds(10))
        #expect(
            Backoff.delay(attempt: 40, base: .milliseconds(200), retryAfter: nil, cap: .seconds(10)) == .seconds(10))
        #expect(Backoff.retryAfter(" 7 ") == .seconds(7) && Backoff.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == nil)
    }

    @Test("§10 S3: a ListObjectsV2 page gives keys (entities decoded), sizes, ETags and the continuation")
    func listing() {
        let xml = """
            <ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>films/a&amp;b.bin</Key><Size>42</Size>\
            <ETag>&quot;abc&quot;</ETag></Contents><Contents><Key>films/c.bin</Key><Size>7</Size></Contents>\
            <NextContinuationToken>tok/en=</NextContinuationToken></ListBucketResult>
            """
        let listing = S3Listing(xml: xml)
        #expect(listing.entries.map(\.key) == ["films/a&b.bin", "films/c.bin"])
        #expect(listing.entries.map(\.size) == [42, 7] && listing.entries.first?.etag == "\"abc\"")
        #expect(listing.isTruncated && listing.nextToken == "tok/en=")
        #expect(S3Listing.errorCode(in: "<Error><Code>NoSuchKey</Code></Error>") == "NoSuchKey")
    }

    @Test("§10 S3: NoSuchKey is gone (C2), NoSuchVersion moved on, NoSuchBucket a misconfigured domain")
    func s3Errors() {
        let dialect = S3Dialect(endpoint: "http://127.0.0.1:1", bucket: "b", prefix: "", headers: [], signer: nil)
        #expect(
            dialect.failure(status: 404, body: "<Error><Code>NoSuchKey</Code></Error>", item: "a")
                == .notFound(status: 404))
        #expect(
            dialect.failure(status: 404, body: "<Error><Code>NoSuchVersion</Code></Error>", item: "a")
                == .versionChanged(current: nil))
        guard
            case .invalidResponse = dialect.failure(
                status: 404, body: "<Error><Code>NoSuchBucket</Code></Error>", item: "a")
        else {
            Issue.record("NoSuchBucket must not be noSuchItem")
            return
        }
        #expect(dialect.failure(status: 503, body: "", item: "a") == nil, "retried")
        #expect(dialect.failure(status: 403, body: "<Error><Code>AccessDenied</Code></Error>", item: "a") == .forbidden)
    }

    @Test("§10 HTTP: item paths are percent-encoded a segment at a time; only a strong ETag pins")
    func httpDialect() throws {
        let dialect = HTTPDialect(base: "http://127.0.0.1:8080/base/", headers: [("Authorization", "Bearer x")])
        #expect(dialect.url("a dir/é#?.bin") == "http://127.0.0.1:8080/base/a%20dir/%C3%A9%23%3F.bin")
        #expect(dialect.pins("\"abc\"") && !dialect.pins("W/\"abc\"") && !dialect.pins("Tue; 5 bytes"))
        let request = try dialect.request("a.bin", range: 10..<20, version: "\"v\"")
        #expect(
            request.headers.first(name: "range") == "bytes=10-19" && request.headers.first(name: "if-match") == "\"v\"")
        #expect(request.headers.first(name: "authorization") == "Bearer x")
    }

    @Test("§10: AWS credentials come from the environment, else the profile file; errors never show the secret")
    func credentials() throws {
        let home = URL(fileURLWithPath: NSTemporaryDirectory() + "aws-" + UUID().uuidString)
        try FileManager.default.createDirectory(
            at: home.appendingPathComponent(".aws"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        #expect(try AWSCredentials.load(environment: [:], home: home) == nil)
        let env = try AWSCredentials.load(
            environment: ["AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SECRET1", "AWS_SESSION_TOKEN": "T"],
            home: home)
        #expect(env == AWSCredentials(accessKeyID: "AK", secretAccessKey: "SECRET1", sessionToken: "T"))
        try """
        [default]
        aws_access_key_id = DK
        aws_secret_access_key = SECRET2
        [work]
        aws_access_key_id=WK
        """.write(to: home.appendingPathComponent(".aws/credentials"), atomically: true, encoding: .utf8)
        #expect(
            try AWSCredentials.load(environment: [:], home: home)
                == AWSCredentials(accessKeyID: "DK", secretAccessKey: "SECRET2"))
        do {
            _ = try AWSCredentials.load(environment: ["AWS_PROFILE": "work"], home: home)
            Issue.record("a profile without a secret must be refused")
        } catch {
            #expect("\(error)".contains("\"work\"") && !"\(error)".contains("SECRET"))
        }
        #expect(throws: AWSCredentialsError.self) {
            try AWSCredentials.load(environment: ["AWS_PROFILE": "gone"], home: home)
        }
        #expect(throws: AWSCredentialsError.self) {
            try AWSCredentials.load(environment: ["AWS_ACCESS_KEY_ID": "AK"], home: home)
        }
    }
}

/// The origins against real servers on 127.0.0.1.
@Suite(.serialized) struct OriginServerTests {
    @Test("§10 §11: an nginx origin lists every file of every folder (autoindex JSON)", .requires(NginxServer.self))
    func nginxListing() async throws {
        try await withTemporaryDirectory { dir in
            for path in ["a.bin", "sub/b.bin", "sub/deeper/c d.bin"] {
                try FileManager.default.createDirectory(
                    atPath: dir + "/" + (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                try TestData.write(Array(repeating: 1, count: path.count), to: dir + "/" + path)
            }
            let server = try await NginxServer.start(root: URL(fileURLWithPath: dir))
            defer { Task { await server.stop() } }
            let origin = OriginEndpoint(location: .http(base: server.baseURL)).makeOrigin()
            let entries = Mutex<[RemoteEntry]>([])
            try await origin.list { page in entries.withLock { $0 += page } }
            let listed = entries.withLock { $0 }.sorted { $0.item < $1.item }
            #expect(listed.map(\.item) == ["a.bin", "sub/b.bin", "sub/deeper/c d.bin"])
            #expect(listed.map(\.size) == [5, 9, 18])
            let head = try await origin.head("sub/deeper/c d.bin", version: nil)
            #expect(head.size == 18 && head.version.hasPrefix("\""))
            await server.stop()
        }
    }

    @Test("§10: a refused connection is unreachable at once, without retries", .requires(NginxServer.self))
    func refused() async throws {
        // A retry would wait at least 20 s (backoff less its 25 % jitter); a machine under load may take a
        // second or two for the one refused connect, so the bound sits between the two.
        var policy = OriginPolicy()
        policy.backoff = .seconds(20)
        let origin = OriginEndpoint(location: .http(base: "http://127.0.0.1:1/"), policy: policy).makeOrigin()
        let start = ContinuousClock.now
        do {
            _ = try await origin.head("a", version: nil)
            Issue.record("port 1 answered")
        } catch let failure as OriginFailure {
            guard case .unreachable = failure else { throw failure }
        }
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test("§10 S3: ListObjectsV2 follows continuation tokens across pages", .requires(MotoServer.self))
    func s3Listing() async throws {
        try await withTemporaryDirectory { dir in
            let server = try await MotoServer.start()
            try await server.createBucket("many", versioned: false)
            try TestData.write([1, 2, 3], to: dir + "/f")
            try await server.putObjects(
                bucket: "many", prefix: "p/", count: 1005, file: URL(fileURLWithPath: dir + "/f"))
            let origin = OriginEndpoint(
                location: .s3(endpoint: server.endpoint, region: server.region, bucket: "many", prefix: "p/"),
                credentials: AWSCredentials(accessKeyID: "testing", secretAccessKey: "testing")
            ).makeOrigin()
            let pages = Mutex<[[RemoteEntry]]>([])
            try await origin.list { page in pages.withLock { $0.append(page) } }
            let all = pages.withLock { $0 }
            #expect(all.count == 2, "S3 pages hold at most 1000 keys")
            #expect(Set(all.joined().map(\.item)) == Set((0..<1005).map { "\($0).bin" }))
            await server.stop()
        }
    }
}
