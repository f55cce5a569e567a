@main struct Worker { static func main() {} }
