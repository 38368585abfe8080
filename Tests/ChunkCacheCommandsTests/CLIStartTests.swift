import ChunkCacheCommands
import Foundation
import SeededRandom
import TestSupport
import Testing

@Suite("§7: a fast CLI start")
struct CLIStartTests {
    /// Every place a command could put a store when none is named: `$CHUNKCACHE_STORE`, `$XDG_CACHE_HOME`
    /// and `~/.cache`, all inside `dir`.
    private func storeEnvironment(_ dir: String) throws -> [String: String?] {
        try FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: false)
        return ["HOME": dir + "/home", "XDG_CACHE_HOME": dir + "/xdg", "CHUNKCACHE_STORE": dir + "/env-store"]
    }

    /// What `dir` holds, every level down.
    private func tree(_ dir: String) throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: dir).sorted()
    }

    @Test("§7: --version prints the version (with --json, {\"version\"}), exits 0 and creates no store")
    func versionTouchesNoStore() throws {
        try withTemporaryDirectory { dir in
            let env = try storeEnvironment(dir)
            for arguments in [
                ["--version"], ["--store", dir + "/store", "--version"], ["--tmp-grace", "0", "--version"],
            ] {
                let result = try runCLI(arguments, env: env)
                #expect(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
                #expect(result.stdout == ChunkCacheCommand.version + "\n", "\(result)")
                #expect(result.stderr.isEmpty, "\(result)")
            }
            let json = try runCLI(["--json", "--version"], env: env)
            #expect(json.exitCode == 0, "\(json)")
            #expect(try json.json().count == 1)
            #expect(try json.json().string("version") == ChunkCacheCommand.version)
            #expect(ChunkCacheCommand.version.split(separator: ".").count == 3, "a semantic version")
            #expect(try tree(dir) == ["home"], "no store appeared anywhere")
        }
    }

    @Test(
        "§7 only `chunkcache [GLOBAL OPTIONS] --version` prints the version: a --version among a command's arguments is a usage error (exit 64) naming what is wrong"
    )
    func versionAmongArgumentsIsNoVersionRequest() throws {
        try withTemporaryDirectory { dir in
            let env = try storeEnvironment(dir)
            let file = dir + "/home/file"
            try TestData.write([1, 2, 3], to: file)
            let cases: [(arguments: [String], mentions: String)] = [
                (["put", "--domain", "P", file, "--version", "v1"], "<file>"),
                (["--store", dir + "/store", "put", "--domain", "P", file, "--version", "v1"], "<file>"),
                (["fetch", "--domain", "P", "--version", "v9"], "<item>"),
                (["fetch", "--version", "v9", "--domain", "P"], "<item>"),
                (["stat", "--version"], "--version"),
                (["--version", "stat"], "--version"),
                (["--json", "--version", "stat"], "--version"),
                (["--version", "extra"], "--version"),
            ]
            for (arguments, mention) in cases {
                let result = try runCLI(arguments, env: env)
                #expect(result.exitCode == 64 && !result.terminatedBySignal, "\(arguments): \(result)")
                #expect(!result.stdout.contains(ChunkCacheCommand.version), "\(arguments): \(result)")
                #expect(
                    result.stderr.contains("invalidArgument") && result.stderr.contains(mention),
                    "\(arguments): \(result)")
            }
            #expect(try tree(dir) == ["home", "home/file"], "no store appeared anywhere")
        }
    }

    /// The words command lines are made of: commands, global options (with values, some that look like flags),
    /// `--version` and `--help`, a command's options and arguments, and strays.
    static let words = [
        "--version", "--version=v1", "--help", "-h", "--json", "--store", "--store=S", "--tmp-grace", "0",
        "--tmp-grace=1h", "put", "fetch", "stat", "domain", "add", "help", "frobnicate", "--domain", "P", "FILE",
        "v1", "--", "-", "",
    ]

    /// Command lines to read both ways: every one of up to two words; each command with its arguments whole or
    /// missing one, global options before or after, and `--version` (with or without a value) at every place;
    /// and 600 seeded draws of 3 to 8 words.
    static func commandLines() -> [[String]] {
        var lines: [[String]] = [[]] + words.map { [$0] }
        for first in words { lines += words.map { [first, $0] } }
        let commands = [
            ["put", "--domain", "P", "ITEM", "FILE"], ["put", "--domain", "P", "FILE"], ["fetch", "--domain", "P"],
            ["fetch", "--domain", "P", "ITEM"], ["stat"], ["versions", "--domain", "P", "ITEM"],
            ["domain", "add", "W", "--origin", "http://127.0.0.1:9/"], ["domain", "add", "W"], [],
        ]
        let globals = [[], ["--json"], ["--store", "S"], ["--store", "--json"], ["--tmp-grace", "--version"]]
        for command in commands {
            for global in globals {
                for version in [["--version"], ["--version", "v1"], ["--version", "--json"]] {
                    for place in 0...command.count {
                        var line = command
                        line.insert(contentsOf: version, at: place)
                        lines += [global + line, line + global]
                    }
                }
            }
        }
        var generator = SplitMix64(seed: 26)
        for _ in 0..<600 {
            lines.append(
                (0..<Int.random(in: 3...8, using: &generator)).map { _ in words.randomElement(using: &generator)! })
        }
        return lines
    }

    @Test(
        "§7 the fast answer to --version and the full parse agree on every command line: the fast path answers only when ArgumentParser asks for the version too, and the parse the CLI runs asks for it exactly then"
    )
    func versionFastPathAgreesWithTheParser() {
        let lines = Self.commandLines()
        for arguments in lines {
            if let problem = CommandFuzzing.versionFastPath(arguments: arguments) { Issue.record("\(problem)") }
        }
        let answered = lines.filter { ChunkCacheCommand.versionReply(to: $0) != nil }
        #expect(answered.count > 20, "the lines include real version requests")
        // The lines include the usage errors ArgumentParser alone answers with the version.
        for hidden in [
            ["put", "--domain", "P", "FILE", "--version", "v1"], ["fetch", "--domain", "P", "--version", "v1"],
        ] {
            #expect(lines.contains(hidden) && CommandFuzzing.argumentParserAsksForVersion(hidden), "\(hidden)")
        }
    }

    @Test("§7: --help, COMMAND --help and help COMMAND print help, exit 0 and create no store")
    func helpTouchesNoStore() throws {
        try withTemporaryDirectory { dir in
            let env = try storeEnvironment(dir)
            for arguments in [
                ["--help"], ["fetch", "--help"], ["help", "fetch"], ["--store", dir + "/store", "put", "--help"],
            ] {
                let result = try runCLI(arguments, env: env)
                #expect(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
                #expect(result.stdout.contains("USAGE: chunkcache"), "\(result)")
            }
            #expect(try tree(dir) == ["home"], "no store appeared anywhere")
        }
    }
}
