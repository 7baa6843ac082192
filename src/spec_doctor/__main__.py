from spec_doctor.cli.app import main

main()
