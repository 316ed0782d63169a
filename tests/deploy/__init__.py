"""Static checks of docker-compose.yml, deploy/otel-collector.yaml and the Dockerfile.

The images cannot be pulled where the tests run, so the stack is validated from its files.
"""
