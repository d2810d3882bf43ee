def main() -> None:
    print("stub")
