import Foundation

/// moto's S3 server mode (PyPI `moto[server]`) on 127.0.0.1: the S3 origin of the tests. With
/// `requireSignatures`, every request after the set-up must carry a valid SigV4 signature of the IAM user the
/// set-up made (moto's `INITIAL_NO_AUTH_ACTION_COUNT`).
public final class MotoServer: TestServer, @unchecked Sendable {
    public let port: Int
    /// `http://127.0.0.1:PORT`.
    public var endpoint: String { "http://127.0.0.1:\(port)" }
    public let region = "us-east-1"
    /// What requests are signed with: an IAM user's key with `requireSignatures`, else any.
    public let credentials: (accessKeyID: String, secretAccessKey: String)
    private let directory: String
    private let process: Process

    public static var unavailableReason: String? {
        guard ServerProcess.python != nil else { return "python3 is not installed" }
        return ServerProcess.pythonHas("moto.server, boto3")
            ? nil : "moto's server is not installed: run scripts/install-deps.sh (pip moto[server])"
    }

    private init(port: Int, directory: String, process: Process, credentials: (String, String)) {
        self.port = port
        self.directory = directory
        self.process = process
        self.credentials = credentials
    }

    public static func start(requireSignatures: Bool = false) async throws -> MotoServer {
        guard let python = ServerProcess.python else { throw ServerError(unavailableReason ?? "no python3") }
        let directory = NSTemporaryDirectory() + "moto-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try helper.write(toFile: directory + "/s3.py", atomically: true, encoding: .utf8)
        let port = try ServerProcess.freePort()
        let log = directory + "/stdout.log"
        // The set-up (an IAM user, its key and policy) takes 3 unauthenticated actions; everything after
        // must be signed.
        let environment = requireSignatures ? ["INITIAL_NO_AUTH_ACTION_COUNT": "3"] : [:]
        let process = try ServerProcess.launch(
            [python, "-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)],
            environment: environment, log: log)
        try await ServerProcess.waitUntilListening(port, process: process, log: log)
        var credentials = (accessKeyID: "testing", secretAccessKey: "testing")
        if requireSignatures {
            let lines = try await run(python, directory, port, credentials, ["make-user"]).split(separator: "\n")
            guard lines.count == 2 else { throw ServerError("moto made no IAM user") }
            credentials = (String(lines[0]), String(lines[1]))
        }
        return MotoServer(port: port, directory: directory, process: process, credentials: credentials)
    }

    public func createBucket(_ name: String, versioned: Bool) async throws {
        _ = try await call(["create-bucket", name, versioned ? "versioned" : "plain"])
    }

    /// Uploads `file` as `key`; returns the new VersionId on a versioned bucket.
    public func putObject(bucket: String, key: String, file: URL) async throws -> String? {
        let id = try await call(["put", bucket, key, file.path]).trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty || id == "None" ? nil : id
    }

    /// Uploads `file` as `PREFIX0.bin` … `PREFIX(count-1).bin` (in one helper run: many objects, one process).
    public func putObjects(bucket: String, prefix: String, count: Int, file: URL) async throws {
        _ = try await call(["put-many", bucket, file.path, prefix, String(count)])
    }

    public func deleteObject(bucket: String, key: String) async throws {
        _ = try await call(["delete", bucket, key])
    }

    /// Sends one request with a bogus signature and returns its HTTP status (moto refuses it with 403 when
    /// it checks signatures).
    public func statusOfForgedRequest(bucket: String) async throws -> Int {
        Int(try await call(["forged", bucket]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    public func stop() async {
        await ServerProcess.stop(process)
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func call(_ arguments: [String]) async throws -> String {
        try await Self.run(ServerProcess.python ?? "python3", directory, port, credentials, arguments)
    }

    /// Runs the boto3 helper on a Dispatch thread (it blocks until the helper exits).
    private static func run(
        _ python: String, _ directory: String, _ port: Int, _ credentials: (String, String),
        _ arguments: [String]
    ) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: python)
                process.arguments = [directory + "/s3.py", "http://127.0.0.1:\(port)"] + arguments
                var environment = ProcessInfo.processInfo.environment
                environment["AWS_ACCESS_KEY_ID"] = credentials.0
                environment["AWS_SECRET_ACCESS_KEY"] = credentials.1
                environment["AWS_DEFAULT_REGION"] = "us-east-1"
                process.environment = environment
                let output = Pipe()
                process.standardOutput = output
                process.standardError = output
                do {
                    try process.run()
                    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                    process.waitUntilExit()
                    guard process.terminationStatus == 0 else {
                        throw ServerError(
                            "s3.py \(arguments.prefix(3).joined(separator: " ")) failed: \(text.suffix(2000))")
                    }
                    continuation.resume(returning: text)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    private static let helper = #"""
        import sys, boto3, botocore.config, urllib.request
        endpoint, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
        # Retries: a test machine under load may drop a connection now and then.
        config = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 5, "mode": "standard"})
        def client(name): return boto3.client(name, endpoint_url=endpoint, region_name="us-east-1", config=config)
        if command == "make-user":
            iam = client("iam")
            iam.create_user(UserName="origin")
            iam.put_user_policy(UserName="origin", PolicyName="all-s3",
                PolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*","iam:*"],"Resource":"*"}]}')
            key = iam.create_access_key(UserName="origin")["AccessKey"]
            print(key["AccessKeyId"]); print(key["SecretAccessKey"])
        elif command == "create-bucket":
            s3 = client("s3")
            s3.create_bucket(Bucket=args[0])
            if args[1] == "versioned":
                s3.put_bucket_versioning(Bucket=args[0], VersioningConfiguration={"Status": "Enabled"})
        elif command == "put":
            with open(args[2], "rb") as f:
                print(client("s3").put_object(Bucket=args[0], Key=args[1], Body=f).get("VersionId"))
        elif command == "put-many":
            s3 = client("s3")
            body = open(args[1], "rb").read()
            for i in range(int(args[3])):
                s3.put_object(Bucket=args[0], Key="%s%d.bin" % (args[2], i), Body=body)
        elif command == "delete":
            client("s3").delete_object(Bucket=args[0], Key=args[1])
        elif command == "forged":
            request = urllib.request.Request(endpoint + "/" + args[0], headers={
                "Authorization": "AWS4-HMAC-SHA256 Credential=AKIAFORGED/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + "0" * 64,
                "x-amz-date": "20260101T000000Z", "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"})
            try:
                print(urllib.request.urlopen(request).status)
            except urllib.error.HTTPError as error:
                print(error.code)
        """#
}
