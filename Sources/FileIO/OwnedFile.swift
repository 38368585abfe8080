/// A file this value owns: its open descriptor, closed when the value ends, and its name, removed then
/// unless ``keep()`` was called. Not copyable, so exactly one owner closes it: the lifetime a
/// `defer { close; unlink }` used to spell out is the value's scope.
///
/// ```swift
/// var file = OwnedFile(try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL), path: path)
/// try file.descriptor.resize(to: size)   // a throw here: closed and removed
/// file.keep()                            // closed when `file` ends; the name stays
/// ```
public struct OwnedFile: ~Copyable {
    /// The open descriptor, valid while this value lives.
    public let descriptor: FileDescriptor
    /// The file's name.
    public let path: String
    private var kept = false

    /// Takes ownership of `descriptor`, open on the file named `path`.
    public init(_ descriptor: FileDescriptor, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    /// Keeps the file's name when this value ends; the descriptor is still closed then.
    public mutating func keep() { kept = true }

    deinit {
        try? descriptor.close()
        if !kept { try? FileSystem.unlink(path) }
    }
}
