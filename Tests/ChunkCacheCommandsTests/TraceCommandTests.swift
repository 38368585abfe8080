import Foundation
import TestSupport
import Testing

/// Learned prefetch through the product's own paths (CONTRACT §15): programs reading through `chunkcache mount`,
/// and the `trace` commands sharing what they taught between two stores.
@Suite(
    "§15 traces on the command line", .serialized,
    .enabled(if: MountProcess.unavailableReason == nil, "\(MountProcess.unavailableReason ?? "")"))
struct TraceCommandTests {
    static let files: [String: [UInt8]] = [
        "app/main.py": TestData.text(count: 3000, seed: 1), "app/a.py": TestData.text(count: 9000, seed: 2),
        "app/b.py": TestData.text(count: 5000, seed: 3), "data/big.db": TestData.random(count: 2 << 20, seed: 5),
    ]

    /// A program's start, as one process: reads its three files whole and 4 KiB of the database at 1 MiB.
    static func program(_ mountPoint: String) -> String {
        """
        python3 -c '
        import hashlib, sys
        h = hashlib.sha256()
        for name in ["app/main.py", "app/a.py", "app/b.py"]:
            h.update(open(sys.argv[1] + "/" + name, "rb").read())
        with open(sys.argv[1] + "/data/big.db", "rb") as f:
            f.seek(1 << 20)
            h.update(f.read(4096))
        print(h.hexdigest())
        ' \(mountPoint)
        """
    }

    /// Runs ``program(_:)`` once through a mount of `store` (which learns its trace), exports the trace and
    /// imports it into a second store of the same origin; returns that store.
    static func learnAndShare(_ dir: String, store: String, server: NginxServer, expected: String) throws -> String {
        let learning = try MountProcess(
            store: store, domain: "web", at: dir + "/mnt", arguments: ["--fill-below", "0"])
        let first = try shell(Self.program(learning.mountPoint))
        #expect(first.status == 0 && first.output == expected, "\(first)")
        #expect(try learning.unmount().exitCode == 0)
        let listed = try runJSON(store, ["trace", "ls", "--domain", "web"]).array("traces")
        let trace = try #require(listed.first as? [String: Any], "\(listed)")
        #expect(listed.count == 1 && trace["leader"] as? String == "app/main.py" && trace["items"] as? Int == 4)
        #expect((trace["bytes"] as? Int ?? .max) * 20 < trace["describedBytes"] as? Int ?? 0, "\(trace)")
        let exported = try runJSON(store, ["trace", "export", "--domain", "web", "--out", dir + "/web.trace"])
        #expect(exported["exported"] as? Int == 1)

        let other = dir + "/other"
        try runJSON(other, ["domain", "add", "web", "--origin", server.baseURL])
        try runJSON(other, ["domain", "sync", "web"])
        #expect(
            try runJSON(other, ["trace", "import", "--domain", "web", dir + "/web.trace"])["imported"] as? Int == 1)
        return other
    }

    @Test(
        "§15 §13: a program's start through the mount teaches a trace; exported and imported, its next start on another store is prefetched at its first open",
        .requires(NginxServer.self))
    func learnThroughMountAndShare() async throws {
        try await MountTests.withSyncedOrigin(Self.files) { dir, store, server in
            // The same program over the origin's folder says what it should print.
            let expected = try shell(Self.program(dir + "/origin")).output
            #expect(expected.count == 65)
            let other = try Self.learnAndShare(dir, store: store, server: server, expected: expected)
            let mount = try MountProcess(
                store: other, domain: "web", at: dir + "/mnt2", arguments: ["--fill-below", "0"])
            try await server.clearAccessLog()
            // A process that reads only the first file: the rest of what the trace predicts is asked for anyway.
            #expect(try shell("head -c 10 \(mount.mountPoint)/app/main.py").status == 0)
            let log = try await server.accessLog(atLeast: 4, timeout: .seconds(20))
            #expect(Set(log.map(\.uri)) == ["/app/main.py", "/app/a.py", "/app/b.py", "/data/big.db"], "\(log)")
            // Once it is in, the whole program reads correct bytes and asks the origin nothing more.
            try await Task.sleep(for: .milliseconds(500))
            let settled = try await server.accessLog().count
            let second = try shell(Self.program(mount.mountPoint))
            #expect(second.status == 0 && second.output == expected, "\(second)")
            #expect(try await server.accessLog().count == settled)
            #expect(try mount.unmount().exitCode == 0)
            let figures = try runJSON(other, ["stat"])
            let prefetched = try figures.int("prefetchedBytes")
            let hits = try figures.int("prefetchHitBytes")
            #expect(prefetched >= 9000 + 5000 && hits <= prefetched, "\(figures)")
            #expect(try figures.int("traces") >= 1)
        }
    }

    @Test(
        "§15 §13: a file the opener's trace predicts is not downloaded whole on open: the mount brings what the trace names, where a mount without the trace hydrates all of it",
        .requires(NginxServer.self))
    func predictedFileIsNotHydratedWhole() async throws {
        try await MountTests.withSyncedOrigin(Self.files) { dir, store, server in
            let expected = try shell(Self.program(dir + "/origin")).output
            let other = try Self.learnAndShare(dir, store: store, server: server, expected: expected)
            let fresh = dir + "/fresh"
            try runJSON(fresh, ["domain", "add", "web", "--origin", server.baseURL])
            try runJSON(fresh, ["domain", "sync", "web"])
            // The mounts keep the default --fill-below (256 MiB): the 2 MiB database is small enough to hydrate.
            var downloaded: [String: Int] = [:]
            for (name, mounted) in [("without", fresh), ("with", other)] {
                let mount = try MountProcess(store: mounted, domain: "web", at: dir + "/mnt-" + name)
                try await server.clearAccessLog()
                let run = try shell(Self.program(mount.mountPoint))
                #expect(run.status == 0 && run.output == expected, "\(name) a trace: \(run)")
                let log = try await Self.settledLog(server)
                downloaded[name] = log.filter { $0.uri == "/data/big.db" }.map(\.bytesSent).reduce(0, +)
                #expect(try mount.unmount().exitCode == 0)
            }
            #expect(downloaded["without"] ?? 0 >= 2 << 20, "no trace: the database is hydrated whole: \(downloaded)")
            let with = downloaded["with"] ?? 0
            #expect(with > 0 && with <= 512 << 10, "with a trace: only around its 4 KiB read: \(downloaded)")
        }
    }

    /// The access log once nothing has been added to it for half a second (downloads behind a program end).
    static func settledLog(_ server: NginxServer) async throws -> [AccessLogEntry] {
        var log = try await server.accessLog()
        while true {
            try await Task.sleep(for: .milliseconds(500))
            let now = try await server.accessLog()
            if now.count == log.count { return now }
            log = now
        }
    }

    @Test(
        "§15 §7: trace rm, on and off answer in JSON; a bad trace file or an unknown domain is a clear error",
        .requires(NginxServer.self))
    func commands() async throws {
        try await MountTests.withSyncedOrigin(Self.files) { dir, store, _ in
            let off = try runJSON(store, ["trace", "off", "--domain", "web"])
            #expect(off["learnedPrefetch"] as? Bool == false && off["domain"] as? String == "web")
            #expect(try runJSON(store, ["trace", "on", "--domain", "web"])["learnedPrefetch"] as? Bool == true)
            try Data("{\"format\": \"nope\"}".utf8).write(to: URL(fileURLWithPath: dir + "/bad.trace"))
            expectError(
                try runCLI(["--store", store, "--json", "trace", "import", "--domain", "web", dir + "/bad.trace"]),
                exit: 1, code: "invalidArgument", mentions: ["not a trace file"])
            expectError(
                try runCLI(["--store", store, "--json", "trace", "import", "--domain", "web", dir + "/missing.trace"]),
                exit: 1, code: "invalidArgument", mentions: ["missing.trace"])
            // A file past the bound is refused after reading just past it (sparse: no disk, no memory for the rest).
            let huge = dir + "/huge.trace"
            #expect(FileManager.default.createFile(atPath: huge, contents: nil))
            #expect(truncate(huge, off_t(1) << 32) == 0)
            expectError(
                try runCLI(["--store", store, "--json", "trace", "import", "--domain", "web", huge]), exit: 1,
                code: "invalidArgument", mentions: ["huge.trace", "larger than 256 MiB"])
            expectError(
                try runCLI(["--store", store, "--json", "trace", "ls", "--domain", "nowhere"]), exit: 1,
                code: "noSuchItem", mentions: ["nowhere"])
            expectError(
                try runCLI(["--store", store, "--json", "trace", "rm", "--domain", "web"]), exit: 64,
                code: "invalidArgument", mentions: ["--all"])
            #expect(try runJSON(store, ["trace", "rm", "--domain", "web", "--all"])["removed"] as? Int == 0)
            #expect(try runJSON(store, ["trace", "ls"]).array("traces").isEmpty)
            let stat = try runJSON(store, ["stat"])
            #expect(try [stat.int("traces"), stat.int("prefetchedBytes"), stat.int("prefetchHitBytes")] == [0, 0, 0])
        }
    }
}
