import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `chunkcache-bench read-latency` and `dedup`: the JSON they promise, the figures that can be known
/// in advance, no progress line when stderr is not a terminal, and bad input as every other command.
@Suite("chunkcache-bench")
struct BenchTests {
    /// The keys of one latency summary.
    static let latencyKeys: Set<String> = ["p50Micros", "p90Micros", "p99Micros"]

    /// Checks `ratio` is `engine / floor` at p50, p90 and p99, within the rounding of the printed figures.
    func expectRatios(
        _ ratio: [String: Any], engine: [String: Any], floor: [String: Any],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        for percentile in ["p50", "p90", "p99"] {
            let expected = try engine.double(percentile + "Micros") / floor.double(percentile + "Micros")
            let reported = try ratio.double(percentile)
            #expect(
                abs(reported - expected) <= 1e-3 * max(1, expected), "\(percentile): \(reported) vs \(expected)",
                sourceLocation: sourceLocation)
        }
    }

    /// The entries of `dir`, sorted.
    func entries(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
    }

    @Test("read-latency --json: the asked figures, ordered percentiles, ratios of its own figures, nothing left behind")
    func readLatencyJSON() throws {
        try withTemporaryDirectory { dir in
            let file = dir + "/data.txt"
            try TestData.write(TestData.text(count: 1 << 20, seed: 31), to: file)
            let scratch = dir + "/scratch"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
            let result = try runBench([
                "--store", dir + "/store", "--json", "read-latency", file, "--iterations", "50",
                "--range-size", "16KiB", "--chunk-size", "16KiB", "--align", "4KiB", "--scratch", scratch,
            ])
            try #require(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
            #expect(result.stderr.isEmpty, "a progress line or message on a non-terminal stderr: \(result.stderr)")
            let json = try result.json()
            #expect(
                Set(json.keys) == [
                    "file", "size", "chunkSize", "rangeSize", "alignment", "iterations", "warmup", "level", "seed",
                    "engine",
                    "rawFloor", "decodeFloor", "ratios", "compressionRatio", "deltaChunks",
                ])
            #expect(try json.string("file") == file)
            #expect(try json.int("size") == 1 << 20)
            #expect(try json.int("chunkSize") == 16 << 10)
            #expect(try json.int("rangeSize") == 16 << 10)
            #expect(try json.int("alignment") == 4096)
            #expect(try json.int("iterations") == 50)
            #expect(try json.int("warmup") == 20)
            #expect(try json.int("level") == 3)
            for key in ["engine", "rawFloor", "decodeFloor"] {
                let summary = try json.object(key)
                #expect(Set(summary.keys) == Self.latencyKeys, "\(key): \(summary.keys.sorted())")
                let p50 = try summary.double("p50Micros")
                let p90 = try summary.double("p90Micros")
                let p99 = try summary.double("p99Micros")
                #expect(p50 > 0 && p50 <= p90 && p90 <= p99, "\(key): \(p50) \(p90) \(p99)")
            }
            let ratios = try json.object("ratios")
            #expect(Set(ratios.keys) == ["engineToRaw", "engineToDecode"])
            for (key, floor) in [("engineToRaw", "rawFloor"), ("engineToDecode", "decodeFloor")] {
                let ratio = try ratios.object(key)
                #expect(Set(ratio.keys) == ["p50", "p90", "p99"])
                try expectRatios(ratio, engine: try json.object("engine"), floor: try json.object(floor))
            }
            // Text compresses: the scratch store holds fewer bytes than it was given.
            #expect(try json.double("compressionRatio") > 1.5)
            // The scratch store is gone, and the --store was never made.
            #expect(entries(scratch).isEmpty, "left in the scratch directory: \(entries(scratch))")
            #expect(entries(dir) == ["data.txt", "scratch"], "\(entries(dir))")
        }
    }

    @Test(
        "§14: read-latency --hot times the same fetches once every chunk they touch is hot, beside the raw floor of the same run"
    )
    func readLatencyHot() throws {
        try withTemporaryDirectory { dir in
            let file = dir + "/data.txt"
            try TestData.write(TestData.text(count: 1 << 20, seed: 33), to: file)
            let result = try runBench([
                "--store", dir + "/store", "--json", "read-latency", file, "--iterations", "30",
                "--range-size", "16KiB", "--chunk-size", "16KiB", "--hot", "--scratch", dir,
            ])
            try #require(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
            let hot = try result.json().object("hot")
            #expect(
                Set(hot.keys) == [
                    "engine", "rawFloor", "ratios", "hotBytes", "hotChunks", "chunksRead", "warmingRounds",
                ])
            let chunks = try hot.int("chunksRead")
            #expect(try chunks > 0 && hot.int("hotChunks") == chunks, "\(hot)")
            #expect(try hot.int("hotBytes") == chunks * (16 << 10))
            try expectRatios(
                try hot.object("ratios").object("engineToRaw"), engine: try hot.object("engine"),
                floor: try hot.object("rawFloor"))
        }
    }

    @Test("read-latency prints a table of the three kinds and the two ratios, and no progress line in a pipe")
    func readLatencySummary() throws {
        try withTemporaryDirectory { dir in
            let file = dir + "/data.bin"
            try TestData.write(TestData.random(count: 512 << 10, seed: 32), to: file)
            let result = try runBench([
                "read-latency", file, "--iterations", "50", "--warmup", "5", "--scratch", dir,
            ])
            try #require(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
            #expect(result.stderr.isEmpty, "\(result.stderr)")
            #expect(!result.stdout.contains("\r"))
            for label in [
                "engine ", "raw floor", "decode floor", "engine / raw", "engine / decode", "p50 µs", "p99 µs",
            ] {
                #expect(result.stdout.contains(label), "no \(label) in \(result.stdout)")
            }
            #expect(entries(dir) == ["data.bin"], "\(entries(dir))")
        }
    }

    @Test("dedup --json: one changed 64 KiB chunk is one new chunk; identical versions add none and the ratio grows")
    func dedupJSON() throws {
        try withTemporaryDirectory { dir in
            let chunk = 64 << 10
            var bytes = TestData.random(count: 4 << 20, seed: 33)
            let v1 = dir + "/v1.bin"
            let v2 = dir + "/v2.bin"
            try TestData.write(bytes, to: v1)
            bytes.replaceSubrange((10 * chunk)..<(11 * chunk), with: TestData.random(count: chunk, seed: 34))
            try TestData.write(bytes, to: v2)
            let result = try runBench(["--json", "dedup", v1, v2, v2, v2, "--scratch", dir])
            try #require(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
            #expect(result.stderr.isEmpty, "\(result.stderr)")
            let json = try result.json()
            #expect(Set(json.keys) == ["chunkSize", "level", "zstdBlockSize", "versions", "totals"])
            #expect(try json.int("chunkSize") == Int64(chunk))
            let versions = try #require(try json.array("versions") as? [[String: Any]])
            try #require(versions.count == 4)
            for (index, version) in versions.enumerated() {
                #expect(
                    Set(version.keys) == [
                        "file", "version", "logicalBytes", "chunks", "newChunks", "storedBytes", "deltaChunks",
                        "storedBytesWithoutDeltas", "cumulativeDedupRatio", "zstdBytes",
                    ])
                #expect(try version.string("file") == (index == 0 ? v1 : v2))
                #expect(try version.string("version") == "v\(index + 1)")
                #expect(try version.int("logicalBytes") == 4 << 20)
                #expect(try version.int("chunks") == 64)
                // Random bytes do not compress: zstd of the whole file takes at least the file.
                #expect(try version.int("zstdBytes") >= 4 << 20)
            }
            #expect(try versions.map { try $0.int("newChunks") } == [64, 1, 0, 0])
            // Random chunks are stored raw; stored bytes count payloads, not the 16-byte chunk headers.
            #expect(try versions[0].int("storedBytes") == 4 << 20)
            #expect(try versions[1].int("storedBytes") == Int64(chunk))
            // The changed chunk is random, unlike its old self: no delta pays, so both stores took the same.
            #expect(try versions.map { try $0.int("deltaChunks") } == [0, 0, 0, 0])
            #expect(
                try versions.map { try $0.int("storedBytesWithoutDeltas") }
                    == versions.map { try $0.int("storedBytes") })
            #expect(try versions[2].int("storedBytes") == 0 && versions[3].int("storedBytes") == 0)
            // Cumulative: versions' bytes so far / unique chunk bytes stored so far.
            let ratios = try versions.map { try $0.double("cumulativeDedupRatio") }
            let expected = [1.0, 2.0 * 64 / 65, 3.0 * 64 / 65, 4.0 * 64 / 65]
            for (got, want) in zip(ratios, expected) { #expect(abs(got - want) < 1e-3, "\(ratios) vs \(expected)") }
            #expect(ratios[1] < ratios[2] && ratios[2] < ratios[3])
            let totals = try json.object("totals")
            #expect(try totals.int("versions") == 4)
            #expect(try totals.int("logicalBytes") == 16 << 20)
            #expect(try totals.int("newChunks") == 65)
            #expect(try totals.int("uniqueBytes") == 65 * Int64(chunk))
            #expect(abs(try totals.double("dedupRatio") - 4.0 * 64 / 65) < 1e-3)
            #expect(try totals.int("zstdBytes") == versions.map { try $0.int("zstdBytes") }.reduce(0, +))
            #expect(try totals.int("storedBytes") == versions.map { try $0.int("storedBytes") }.reduce(0, +))
            #expect(entries(dir) == ["v1.bin", "v2.bin"], "\(entries(dir))")
        }
    }

    @Test(
        "dedup --json with deltas (§14): a version with bytes inserted near its start is stored as deltas, a fifth or less of what the store without deltas takes"
    )
    func dedupWithDeltas() throws {
        try withTemporaryDirectory { dir in
            var bytes = TestData.text(count: 1 << 20, seed: 36)
            try TestData.write(bytes, to: dir + "/v1.txt")
            bytes.insert(contentsOf: Array("inserted".utf8), at: 1000)
            try TestData.write(bytes, to: dir + "/v2.txt")
            let json = try runBench(["--json", "dedup", dir + "/v1.txt", dir + "/v2.txt", "--scratch", dir])
                .json()
            let versions = try #require(try json.array("versions") as? [[String: Any]])
            try #require(versions.count == 2)
            #expect(try versions[0].int("deltaChunks") == 0)
            #expect(try versions[0].int("storedBytes") == versions[0].int("storedBytesWithoutDeltas"))
            #expect(try versions[1].int("newChunks") == 17, "every chunk after the insertion is new")
            #expect(try versions[1].int("deltaChunks") >= 15)
            #expect(try versions[1].int("storedBytes") * 5 <= versions[1].int("storedBytesWithoutDeltas"))
            let totals = try json.object("totals")
            #expect(try totals.int("deltaChunks") == versions[1].int("deltaChunks"))
        }
    }

    @Test("dedup of text: zstd of the whole file is smaller than the file, and the table names every version")
    func dedupSummary() throws {
        try withTemporaryDirectory { dir in
            let file = dir + "/a.txt"
            try TestData.write(TestData.text(count: 1 << 20, seed: 35), to: file)
            let json = try runBench(["--json", "dedup", file, "--chunk-size", "16KiB", "--scratch", dir]).json()
            let version = try #require(try json.array("versions").first as? [String: Any])
            #expect(try json.int("chunkSize") == 16 << 10)
            #expect(try version.int("chunks") == 64)
            #expect(try version.int("zstdBytes") > 0 && version.int("zstdBytes") < (1 << 20) / 2)
            let result = try runBench(["dedup", file, file, "--scratch", dir])
            try #require(result.exitCode == 0, "\(result)")
            #expect(result.stderr.isEmpty, "\(result.stderr)")
            for text in ["v1", "v2", "total", "dedup ×", "zstd -3", file] {
                #expect(result.stdout.contains(text), "no \(text) in \(result.stdout)")
            }
            #expect(entries(dir) == ["a.txt"], "\(entries(dir))")
        }
    }

    @Test(
        "on a terminal, stderr shows a progress line rewritten with \\r, and stdout stays clean",
        .enabled(if: Capabilities.path(of: "script") != nil, "needs script(1) for a pseudo-terminal"))
    func progressOnTerminal() throws {
        let binary = try #require(ChunkCacheBinary.benchPath)
        try withTemporaryDirectory { dir in
            let file = dir + "/a.bin"
            try TestData.write(TestData.random(count: 3 << 20, seed: 38), to: file)
            // script(1) gives the command a pseudo-terminal; stdout goes to a file, so the terminal shows stderr only.
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try #require(Capabilities.path(of: "script")))
            process.arguments = [
                "-qec", "'\(binary)' dedup '\(file)' '\(file)' --scratch '\(dir)' > '\(dir)/out'", "/dev/null",
            ]
            let terminal = Pipe()
            process.standardOutput = terminal
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let shown = String(decoding: terminal.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(shown)")
            #expect(shown.contains("\r\u{1B}[Kversion 1/2: storing"), "no progress line: \(shown.debugDescription)")
            #expect(
                shown.hasSuffix("\r\u{1B}[K"), "the progress line is not erased at the end: \(shown.debugDescription)")
            let stdout = try String(contentsOfFile: dir + "/out", encoding: .utf8)
            #expect(
                stdout.contains("total") && !stdout.contains("\r") && !stdout.contains("\u{1B}"),
                "\(stdout.debugDescription)")
        }
    }

    @Test(
        "§7: chunkcache-bench's --help and help COMMAND print the help as text and exit 0, whatever --json says",
        arguments: [
            ["--json", "dedup", "--help"], ["--help"], ["help", "read-latency"], ["--json", "churn", "-h"],
            ["deltas", "--help", "--json"],
        ])
    func helpIsText(arguments: [String]) throws {
        let result = try runBench(arguments)
        #expect(result.exitCode == 0 && !result.terminatedBySignal && result.stderr.isEmpty, "\(result)")
        #expect(result.stdout.hasPrefix("OVERVIEW: ") && !result.stdout.hasPrefix("{"), "\(result.stdout)")
        let names = arguments.filter { !$0.hasPrefix("-") && $0 != "help" }
        #expect(
            result.stdout.contains("USAGE: chunkcache-bench \(names.joined(separator: " "))"), "\(result.stdout)")
    }

    @Test(
        "the benchmarks are chunkcache-bench's: chunkcache has no bench command, a usage error that lists the commands"
    )
    func notInTheCLI() throws {
        let result = try runCLI(["--json", "bench", "dedup", "FILE"])
        expectError(result, exit: 64, code: "invalidArgument", mentions: ["unknown command 'bench'", "fetch"])
        #expect(!(try runCLI(["--help"]).stdout.contains("bench")), "chunkcache --help lists a bench command")
    }

    @Test("a missing file is an engine error naming it, exit 1")
    func missingFile() throws {
        try withTemporaryDirectory { dir in
            let file = dir + "/there"
            try TestData.write(TestData.random(count: 100_000, seed: 36), to: file)
            let missing = dir + "/missing.bin"
            expectError(
                try runBench(["--json", "read-latency", missing, "--scratch", dir]),
                exit: 1, code: "invalidArgument", mentions: ["chunkcache-bench: invalidArgument: ", missing])
            expectError(
                try runBench(["--json", "dedup", file, missing, "--scratch", dir]),
                exit: 1, code: "invalidArgument", mentions: [missing])
            expectError(
                try runBench(["--json", "dedup", dir, "--scratch", dir]),
                exit: 1, code: "invalidArgument", mentions: [dir])
            #expect(entries(dir) == ["there"], "\(entries(dir))")
        }
    }

    @Test(
        "bad sizes and counts are usage errors, exit 64",
        arguments: [
            ["read-latency", "FILE", "--range-size", "0"],
            ["read-latency", "FILE", "--range-size", "lots"],
            ["read-latency", "FILE", "--range-size", "1MiB"],  // larger than the file
            ["read-latency", "FILE", "--align", "3000"],
            ["read-latency", "FILE", "--chunk-size", "3000"],
            ["read-latency", "FILE", "--chunk-size", "1KiB"],
            ["read-latency", "FILE", "--iterations", "0"],
            ["read-latency", "FILE", "--level", "0"],
            ["dedup", "FILE", "--chunk-size", "8MiB"],
            ["dedup", "FILE", "--level", "99"],
            ["dedup"],
        ])
    func badSizes(_ arguments: [String]) throws {
        try withTemporaryDirectory { dir in
            let file = dir + "/file"
            try TestData.write(TestData.random(count: 100_000, seed: 37), to: file)
            let result = try runBench(
                ["--json"] + arguments.map { $0 == "FILE" ? file : $0 } + ["--scratch", dir])
            expectError(result, exit: 64, code: "invalidArgument")
            #expect(entries(dir) == ["file"], "\(entries(dir))")
        }
    }
}
